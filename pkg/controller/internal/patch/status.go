// Package patch is the plumbing every controller shares: status writes, events once per state, truncated
// messages. See docs/architecture.md, "Status writes and events".
package patch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxAttempts bounds the re-read-and-retry loop after a failed first patch.
const maxAttempts = 4

// Status writes what desired changed in base's status (re-read with fresh on a 409 or 422); on success desired
// holds the server's object. See docs/architecture.md, "Status writes and events", for a base from a lagging cache.
func Status(ctx context.Context, c client.Client, fresh client.Reader, base, desired client.Object) error {
	from, err := statusOf(base)
	if err != nil {
		return err
	}
	to, err := statusOf(desired)
	if err != nil {
		return err
	}
	ch := diff(from, to)
	if ch.empty() {
		return nil
	}
	p, err := ch.firstPatch(from, base.GetResourceVersion())
	if err != nil {
		return err
	}
	err = c.Status().Patch(ctx, desired, p)
	for attempt := 1; attempt < maxAttempts && (apierrors.IsConflict(err) || apierrors.IsInvalid(err)); attempt++ {
		err = rebaseAndPatch(ctx, c, fresh, ch, desired)
	}
	return err
}

// SetStatus writes the status set gives a copy of obj, as Status does (nil
// fresh: c); on success obj holds the server's object.
func SetStatus[T client.Object](ctx context.Context, c client.Client, fresh client.Reader, obj T, set func(T)) error {
	upd, ok := obj.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	set(upd)
	if fresh == nil {
		fresh = c
	}
	if err := Status(ctx, c, fresh, obj, upd); err != nil {
		return fmt.Errorf("patching the status of %s %s: %w", reflect.TypeOf(obj).Elem().Name(), client.ObjectKeyFromObject(obj), err)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(upd).Elem())
	return nil
}

// rebaseAndPatch re-reads the object and applies ch to it under an optimistic lock.
func rebaseAndPatch(ctx context.Context, c client.Client, fresh client.Reader, ch changes, desired client.Object) error {
	cur, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", desired)
	}
	if err := fresh.Get(ctx, client.ObjectKeyFromObject(desired), cur); err != nil {
		return fmt.Errorf("re-reading before a status retry: %w", err)
	}
	st, err := statusOf(cur)
	if err != nil {
		return err
	}
	data, err := mergePatch(st, ch, cur.GetResourceVersion())
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, desired, client.RawPatch(types.MergePatchType, data))
}

// status is an object's status as JSON: the fields but conditions, and the conditions.
type status struct {
	fields map[string]json.RawMessage
	conds  []condition
}

type condition struct {
	Type string
	raw  json.RawMessage
}

func statusOf(obj client.Object) (status, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return status{}, fmt.Errorf("encoding %T: %w", obj, err)
	}
	var top struct {
		Status map[string]json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return status{}, fmt.Errorf("decoding the status of %T: %w", obj, err)
	}
	st := status{fields: top.Status}
	if st.fields == nil {
		st.fields = map[string]json.RawMessage{}
	}
	if rc, ok := st.fields["conditions"]; ok {
		delete(st.fields, "conditions")
		var list []json.RawMessage
		var heads []struct {
			Type string `json:"type"`
		}
		if err := errors.Join(json.Unmarshal(rc, &list), json.Unmarshal(rc, &heads)); err != nil {
			return status{}, fmt.Errorf("decoding the conditions of %T: %w", obj, err)
		}
		for i, c := range list {
			st.conds = append(st.conds, condition{Type: heads[i].Type, raw: c})
		}
	}
	return st, nil
}

func (s status) index(t string) int {
	return slices.IndexFunc(s.conds, func(c condition) bool { return c.Type == t })
}

// changes are the top-level fields and conditions (by type) set or removed.
type changes struct {
	set       map[string]json.RawMessage
	unset     []string
	condSet   []condition
	condUnset []string
}

func diff(from, to status) changes {
	ch := changes{set: map[string]json.RawMessage{}}
	for k, v := range to.fields {
		if old, ok := from.fields[k]; !ok || !bytes.Equal(old, v) {
			ch.set[k] = v
		}
	}
	for k := range from.fields {
		if _, ok := to.fields[k]; !ok {
			ch.unset = append(ch.unset, k)
		}
	}
	sort.Strings(ch.unset)
	for _, c := range to.conds {
		if i := from.index(c.Type); i < 0 || !bytes.Equal(from.conds[i].raw, c.raw) {
			ch.condSet = append(ch.condSet, c)
		}
	}
	for _, c := range from.conds {
		if to.index(c.Type) < 0 {
			ch.condUnset = append(ch.condUnset, c.Type)
		}
	}
	return ch
}

func (ch changes) empty() bool {
	return len(ch.set) == 0 && len(ch.unset) == 0 && !ch.conditionsChanged()
}

func (ch changes) conditionsChanged() bool {
	return len(ch.condSet) > 0 || len(ch.condUnset) > 0
}

// applyTo returns s with the changes; conditions keep their place.
func (ch changes) applyTo(s status) status {
	out := status{fields: maps.Clone(s.fields), conds: slices.Clone(s.conds)}
	maps.Copy(out.fields, ch.set)
	for _, k := range ch.unset {
		delete(out.fields, k)
	}
	for _, c := range ch.condSet {
		if i := out.index(c.Type); i >= 0 {
			out.conds[i] = c
		} else {
			out.conds = append(out.conds, c)
		}
	}
	out.conds = slices.DeleteFunc(out.conds, func(c condition) bool { return slices.Contains(ch.condUnset, c.Type) })
	return out
}

// firstPatch is the patch sent against base (see Status).
func (ch changes) firstPatch(base status, resourceVersion string) (client.Patch, error) {
	if !ch.conditionsChanged() {
		resourceVersion = "" // no whole conditions list sent: no lock
	} else if len(base.conds) > 0 {
		data, err := json.Marshal(ch.jsonPatch(base))
		return client.RawPatch(types.JSONPatchType, data), err
	}
	data, err := mergePatch(base, ch, resourceVersion)
	return client.RawPatch(types.MergePatchType, data), err
}

// op is one RFC 6902 operation.
type op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// jsonPatch applies ch over base's conditions, each operation guarded by a test of the type at its index:
// replacements, removals from the highest index down (lower indices stay valid), then appends.
func (ch changes) jsonPatch(base status) []op {
	var ops []op
	for _, k := range slices.Sorted(maps.Keys(ch.set)) {
		ops = append(ops, op{Op: "add", Path: "/status/" + escape(k), Value: ch.set[k]})
	}
	for _, k := range ch.unset {
		ops = append(ops, op{Op: "remove", Path: "/status/" + escape(k)})
	}
	var appends []op
	for _, c := range ch.condSet {
		i := base.index(c.Type)
		if i < 0 {
			appends = append(appends, op{Op: "add", Path: "/status/conditions/-", Value: c.raw})
			continue
		}
		ops = append(ops, typeTest(i, c.Type), op{Op: "replace", Path: condPath(i), Value: c.raw})
	}
	removed := make([]int, 0, len(ch.condUnset))
	for _, t := range ch.condUnset {
		removed = append(removed, base.index(t))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(removed)))
	for _, i := range removed {
		ops = append(ops, typeTest(i, base.conds[i].Type), op{Op: "remove", Path: condPath(i)})
	}
	return append(ops, appends...)
}

func condPath(i int) string { return "/status/conditions/" + strconv.Itoa(i) }

func typeTest(i int, t string) op {
	v, _ := json.Marshal(t)
	return op{Op: "test", Path: condPath(i) + "/type", Value: v}
}

// escape encodes a JSON pointer token (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// mergePatch returns a merge patch applying ch over from; a resourceVersion
// locks it (callers do when it carries the whole conditions list).
func mergePatch(from status, ch changes, resourceVersion string) ([]byte, error) {
	st := map[string]any{}
	for k, v := range ch.set {
		st[k] = mergeValue(from.fields[k], v)
	}
	for _, k := range ch.unset {
		st[k] = nil
	}
	if ch.conditionsChanged() {
		list := []json.RawMessage{}
		for _, c := range ch.applyTo(from).conds {
			list = append(list, c.raw)
		}
		st["conditions"] = list
	}
	body := map[string]any{"status": st}
	if resourceVersion != "" {
		body["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	}
	return json.Marshal(body)
}

// mergeValue is the merge patch value turning old into new: for objects, the
// keys that differ, null for those new dropped (sent whole, they would stay).
func mergeValue(old, new json.RawMessage) json.RawMessage {
	var o, n map[string]json.RawMessage
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(new, &n) != nil || o == nil || n == nil {
		return new
	}
	out := map[string]json.RawMessage{}
	for k, v := range n {
		if ov, ok := o[k]; !ok {
			out[k] = v
		} else if !bytes.Equal(ov, v) {
			out[k] = mergeValue(ov, v)
		}
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			out[k] = json.RawMessage("null")
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return new
	}
	return data
}
