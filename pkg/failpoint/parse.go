package failpoint

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a CAIRN_FAILPOINTS value into the hit number at which each
// named point crashes.
func Parse(spec string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, term := range strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || r == ',' }) {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		name, action, ok := strings.Cut(term, "=")
		name, action = strings.TrimSpace(name), strings.TrimSpace(action)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=crash or name=crash@N", term)
		}
		at := int64(1)
		if n, found := strings.CutPrefix(action, "crash@"); found {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("%q: the hit number must be a whole number from 1", term)
			}
			at = v
		} else if action != "crash" {
			return nil, fmt.Errorf("%q: unknown action %q (want crash or crash@N)", term, action)
		}
		out[name] = at
	}
	return out, nil
}
