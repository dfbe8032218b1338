package storetest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// EveryFieldSet fails tb for each field of the struct v (and of the
// structs it embeds) that is left zero: a wire fixture that sets every
// field keeps covering the fields added after it.
func EveryFieldSet(tb testing.TB, v any) {
	tb.Helper()
	everyFieldSet(tb, reflect.ValueOf(v), reflect.TypeOf(v).Name())
}

func everyFieldSet(tb testing.TB, v reflect.Value, name string) {
	tb.Helper()
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		switch {
		case f.Anonymous && fv.Kind() == reflect.Struct:
			everyFieldSet(tb, fv, name+"."+f.Name)
		case fv.IsZero():
			tb.Errorf("the fixture leaves %s.%s empty", name, f.Name)
		}
	}
}

// SameJSON fails tb unless got and want hold the same keys and values,
// in whatever order.
func SameJSON(tb testing.TB, got, want []byte) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		tb.Fatalf("%s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("writes\n%s\nwant the keys and values of\n%s", got, want)
	}
}
