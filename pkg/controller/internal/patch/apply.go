// Package patch is the plumbing every controller shares: status writes by server-side apply, one field
// manager per writer, events once per state, truncated messages. See docs/architecture.md, "Status writes
// and events".
package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Fields names the status fields one field manager owns; each is written by one manager alone
// (docs/architecture.md, "Status writes and events").
type Fields struct {
	Manager    string   // the field manager the fields are applied under
	All        bool     // every status field (the manager is the status's only writer); else Keys and Conditions
	Keys       []string // top-level status keys, by their JSON names ("conditions" is never one)
	Conditions []string // the types of the entries of status.conditions (a list map keyed by type) it owns
}

// ApplyStatus writes f's fields of desired's status by server-side apply, unless current (the object as last
// read) already has them as desired has: at rest nothing is sent. On a write desired is the server's object.
// Fields f owns that desired lacks are removed by the write (fields an older writer left are not: an apply
// removes only what its manager owned).
func ApplyStatus(ctx context.Context, c client.Client, current, desired client.Object, f Fields) (bool, error) {
	from, err := owned(current, f)
	if err != nil {
		return false, err
	}
	to, err := owned(desired, f)
	if err != nil {
		return false, err
	}
	if sameStatus(from, to) {
		return false, nil
	}
	gvk, err := apiutil.GVKForObject(desired, c.Scheme())
	if err != nil {
		return false, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": to}}
	u.SetGroupVersionKind(gvk)
	u.SetName(desired.GetName())
	u.SetNamespace(desired.GetNamespace())
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(f.Manager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying the status of %s %s as %s: %w", gvk.Kind, client.ObjectKeyFromObject(desired), f.Manager, err)
	}
	return true, decodeInto(u, desired)
}

// StatusChanged reports whether desired's status differs from current's in f's fields.
func StatusChanged(current, desired client.Object, f Fields) (bool, error) {
	from, err := owned(current, f)
	if err != nil {
		return false, err
	}
	to, err := owned(desired, f)
	return err == nil && !sameStatus(from, to), err
}

// owned is obj's status restricted to f's fields, as JSON values.
func owned(obj client.Object, f Fields) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	var top struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("decoding the status of %T: %w", obj, err)
	}
	if f.All {
		if top.Status == nil {
			return map[string]any{}, nil
		}
		return top.Status, nil
	}
	out := map[string]any{}
	zeros := numberKeys(obj)
	for _, k := range f.Keys {
		if v, ok := top.Status[k]; ok {
			out[k] = v
		} else if zeros[k] {
			// A count of 0 (omitempty) is sent as 0: left out, one another writer set would stay.
			out[k] = float64(0)
		}
	}
	list, _ := top.Status["conditions"].([]any)
	var conds []any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && slices.Contains(f.Conditions, fmt.Sprint(m["type"])) {
			conds = append(conds, c)
		}
	}
	if len(conds) > 0 {
		out["conditions"] = conds
	}
	return out, nil
}

// numberKeys are the JSON names of the integer fields of obj's Status.
func numberKeys(obj client.Object) map[string]bool {
	v := reflect.ValueOf(obj).Elem().FieldByName("Status")
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]bool{}
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		switch sf.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			out[name] = true
		}
	}
	return out
}

// sameStatus compares two owned views; conditions by type (the server keeps an order of its own).
func sameStatus(a, b map[string]any) bool {
	return reflect.DeepEqual(byType(a), byType(b))
}

func byType(st map[string]any) map[string]any {
	list, ok := st["conditions"].([]any)
	if !ok {
		return st
	}
	out := make(map[string]any, len(st))
	for k, v := range st {
		out[k] = v
	}
	conds := map[string]any{}
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			conds[fmt.Sprint(m["type"])] = c
		}
	}
	out["conditions"] = conds
	return out
}

// decodeInto replaces obj with the server's answer u.
func decodeInto(u *unstructured.Unstructured, obj client.Object) error {
	raw, err := u.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding the applied %s: %w", u.GetKind(), err)
	}
	fresh := reflect.New(reflect.TypeOf(obj).Elem())
	if err := json.Unmarshal(raw, fresh.Interface()); err != nil {
		return fmt.Errorf("decoding the applied %s: %w", u.GetKind(), err)
	}
	reflect.ValueOf(obj).Elem().Set(fresh.Elem())
	return nil
}

// SetStatus writes the status set gives a copy of obj: each of fields, in turn, by ApplyStatus; obj then holds
// the server's object.
func SetStatus[T client.Object](ctx context.Context, c client.Client, obj T, set func(T), fields ...Fields) error {
	want, ok := obj.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	set(want)
	cur := obj
	for _, f := range fields {
		desired, _ := want.DeepCopyObject().(T)
		if err := copyMetaAndSpec(cur, desired); err != nil {
			return err
		}
		wrote, err := ApplyStatus(ctx, c, cur, desired, f)
		if err != nil {
			return err
		}
		if wrote {
			cur = desired
		}
	}
	if any(cur) != any(obj) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(cur).Elem())
	}
	return nil
}

// copyMetaAndSpec gives to from's metadata (its resourceVersion) and all but its status.
func copyMetaAndSpec(from, to client.Object) error {
	st := reflect.ValueOf(to).Elem().FieldByName("Status")
	if !st.IsValid() {
		return fmt.Errorf("%T has no Status", to)
	}
	keep := reflect.New(st.Type()).Elem()
	keep.Set(st)
	reflect.ValueOf(to).Elem().Set(reflect.ValueOf(from.DeepCopyObject()).Elem())
	reflect.ValueOf(to).Elem().FieldByName("Status").Set(keep)
	return nil
}
