package harness

import (
	"reflect"
	"strings"
	"testing"
)

// Config is what a user's Go code fills in (splitbraintest, the examples): none of its
// fields may have a type a user outside this module cannot name (an internal package's).
func TestConfigExposesNoInternalType(t *testing.T) {
	var internal func(reflect.Type, map[reflect.Type]bool) string
	internal = func(ty reflect.Type, seen map[reflect.Type]bool) string {
		if seen[ty] {
			return ""
		}
		seen[ty] = true
		if strings.Contains(ty.PkgPath(), "/internal/") || strings.HasSuffix(ty.PkgPath(), "/internal") {
			return ty.PkgPath() + "." + ty.Name()
		}
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			return internal(ty.Elem(), seen)
		case reflect.Map:
			if s := internal(ty.Key(), seen); s != "" {
				return s
			}
			return internal(ty.Elem(), seen)
		case reflect.Func:
			for i := 0; i < ty.NumIn(); i++ {
				if s := internal(ty.In(i), seen); s != "" {
					return s
				}
			}
			for i := 0; i < ty.NumOut(); i++ {
				if s := internal(ty.Out(i), seen); s != "" {
					return s
				}
			}
		}
		return ""
	}
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if !f.IsExported() {
			continue
		}
		if s := internal(f.Type, map[reflect.Type]bool{}); s != "" {
			t.Errorf("Config.%s has type %s, from an internal package a user cannot import: give it a type of this package (as ProgressMode) or a plain one", f.Name, s)
		}
	}
}
