package webhooks

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	sigsjson "sigs.k8s.io/json"
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// locate returns the path (spec.taints[0].timeAdded) of the value in raw that makes decoding into a t
// fail with msg ("" if none). One pass over raw's tokens, decoding on its own only a value that can fail
// (a type with its own UnmarshalJSON, taken whole; a number; a token of the wrong kind): linear in
// len(raw) at any depth or width. Without a value failing with msg, the first that fails at all.
func locate(raw []byte, t reflect.Type, msg string) string {
	l := &locator{raw: raw, dec: json.NewDecoder(bytes.NewReader(raw)), msg: msg}
	l.dec.UseNumber()
	if path, found := l.value(t, ""); found {
		return path
	}
	return l.first
}

type locator struct {
	raw   []byte
	dec   *json.Decoder
	msg   string
	first string // the path of the first value failing with another message
	bad   bool   // first is set
}

// value reads the next value, of type t (nil: a field the decoder ignores) at path;
// found when it is the one failing with msg, or raw ends or is malformed (search over).
func (l *locator) value(t reflect.Type, path string) (string, bool) {
	for t != nil && t.Kind() == reflect.Pointer && !t.Implements(jsonUnmarshaler) {
		t = t.Elem()
	}
	if t == nil || implements(t, jsonUnmarshaler) || !l.composite(t) {
		// Read whole: skipped, or decoded once on its own and not entered.
		var v json.RawMessage
		if l.dec.Decode(&v) != nil {
			return "", true
		}
		if t != nil && (implements(t, jsonUnmarshaler) || v[0] == '{' || v[0] == '[') {
			return l.check(v, t, path)
		}
		return l.leaf(v, t, path)
	}
	tok, err := l.dec.Token()
	if err != nil {
		return "", true
	}
	switch tok {
	case json.Delim('{'):
		for l.dec.More() {
			k, err := l.dec.Token()
			key, ok := k.(string)
			if err != nil || !ok {
				return "", true
			}
			if p, found := l.value(memberType(t, key), join(path, key)); found {
				return p, true
			}
		}
	case json.Delim('['):
		for i := 0; l.dec.More(); i++ {
			if p, found := l.value(elemType(t), fmt.Sprintf("%s[%d]", path, i)); found {
				return p, true
			}
		}
	default:
		// composite saw null: never an error without an UnmarshalJSON.
		return "", false
	}
	if _, err := l.dec.Token(); err != nil { // the closing delimiter
		return "", true
	}
	return "", false
}

// composite: the next value is an object or array that t decodes member by member,
// or null (read as a token).
func (l *locator) composite(t reflect.Type) bool {
	rest := bytes.TrimLeft(l.raw[l.dec.InputOffset():], " \t\r\n:,")
	if len(rest) == 0 {
		return false
	}
	switch rest[0] {
	case '{':
		return t.Kind() == reflect.Struct || t.Kind() == reflect.Map || t.Kind() == reflect.Interface
	case '[':
		return t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Interface
	case 'n':
		return true
	}
	return false
}

// leaf checks a string, number, bool or null of type t where it can fail to decode.
func (l *locator) leaf(v json.RawMessage, t reflect.Type, path string) (string, bool) {
	if t == nil || v[0] == 'n' {
		return "", false
	}
	k := t.Kind()
	switch {
	case v[0] == '"' && implements(t, textUnmarshaler):
	case v[0] == '"':
		if k == reflect.String || k == reflect.Interface {
			return "", false
		}
	case v[0] == 't' || v[0] == 'f':
		if k == reflect.Bool || k == reflect.Interface {
			return "", false
		}
	case k == reflect.Interface:
		// A number into any fails only beyond float64 (PreserveInts keeps the others).
		if _, err := strconv.ParseFloat(string(v), 64); err == nil {
			return "", false
		}
	}
	return l.check(v, t, path)
}

// check decodes v alone into a t: found when it fails with msg.
func (l *locator) check(v json.RawMessage, t reflect.Type, path string) (string, bool) {
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(v, reflect.New(t).Interface())
	switch {
	case err == nil:
		return "", false
	case err.Error() == l.msg:
		return path, true
	case !l.bad:
		l.first, l.bad = path, true
	}
	return "", false
}

func implements(t reflect.Type, iface reflect.Type) bool {
	return t.Implements(iface) || reflect.PointerTo(t).Implements(iface)
}

// memberType is the type decoding a t's member key goes to (nil: ignored).
func memberType(t reflect.Type, key string) reflect.Type {
	switch t.Kind() {
	case reflect.Interface:
		return t
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		return fieldType(t, key)
	}
	return nil
}

func elemType(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Interface:
		return t
	case reflect.Slice, reflect.Array:
		return t.Elem()
	}
	return nil
}

// fieldType is the type of struct t's field named key in JSON, exactly (the decoder is
// case-sensitive), embedded structs without a name included; nil when none.
func fieldType(t reflect.Type, key string) reflect.Type {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case name == "" && f.Anonymous:
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type
		}
	}
	for _, e := range embedded {
		if ft := fieldType(e, key); ft != nil {
			return ft
		}
	}
	return nil
}

// join appends key to path: metadata.name, or ["a key"] for a non-identifier.
func join(path, key string) string {
	switch {
	case !identifier.MatchString(key):
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	default:
		return path + "." + key
	}
}
