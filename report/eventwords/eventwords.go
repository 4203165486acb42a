// Package eventwords says an event mark's detail (timeline.Mark.Detail) in
// words, for every page that shows one: the terminal report and the HTML
// page. It is a leaf: it imports nothing of firedrill, so both can.
package eventwords

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// detailFirst are the keys of an event mark's detail said first, in this
// order: who the event's session is. The rest follow alphabetically.
var detailFirst = []string{"pid", "application_name", "xid", "txid"}

// Detail says an event mark's detail (timeline.Mark.Detail) in words:
// "pid 4242, application name firedrill-event:hold, xid 1234, held 5.0 s",
// rather than as JSON.
func Detail(detail map[string]any) string {
	keys := make([]string, 0, len(detail))
	for k := range detail {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := slices.Index(detailFirst, keys[i]), slices.Index(detailFirst, keys[j])
		switch {
		case a >= 0 && b >= 0:
			return a < b
		case a >= 0 || b >= 0:
			return a >= 0
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, detailPhrase(k, detail[k]))
	}
	return strings.Join(parts, ", ")
}

// detailPhrase is one key and its value: a unit suffix of the key
// (_seconds, _s, _ms, _bytes) goes after the value.
func detailPhrase(key string, v any) string {
	name, unit := key, ""
	for _, u := range []struct{ suffix, unit string }{{"_seconds", "s"}, {"_s", "s"}, {"_ms", "ms"}, {"_bytes", "bytes"}} {
		if strings.HasSuffix(key, u.suffix) {
			name, unit = strings.TrimSuffix(key, u.suffix), u.unit
			break
		}
	}
	value := detailValue(v, unit != "")
	if unit != "" {
		value += " " + unit
	}
	return strings.ReplaceAll(name, "_", " ") + " " + value
}

// detailValue is a decoded JSON value in words; measured (a value with
// a unit) floats get one decimal, counts and ids none.
func detailValue(v any, measured bool) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		if measured {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'g', 4, 64)
	case string:
		if x == "" {
			return `""`
		}
		return x
	case []any:
		items := make([]string, len(x))
		for i, e := range x {
			items[i] = detailValue(e, measured)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case map[string]any:
		// Nested keys are data (a setting's name), not field names: as
		// they are.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		items := make([]string, len(keys))
		for i, k := range keys {
			items[i] = k + " " + detailValue(x[k], measured)
		}
		return "(" + strings.Join(items, ", ") + ")"
	}
	return fmt.Sprint(v)
}
