package postgres

import (
	"testing"
)

// TestDatabaseAges reads the wraparound ages and the database size.
func TestDatabaseAges(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	values, detail := sample(t, samplerOf(t, set, databaseAgesName))
	if values["datfrozenxid_age"] <= 0 || values["size_bytes"] < 1<<20 {
		t.Errorf("values %v: want a positive datfrozenxid_age and a size of at least 1 MiB", values)
	}
	if _, ok := values["mxid_age"]; !ok {
		t.Error("mxid_age missing")
	}
	ages, ok := detail.(*DatabaseAges)
	if !ok || ages.OldestXidDatabase == "" || ages.DatfrozenxidAge != values["datfrozenxid_age"] {
		t.Errorf("detail %+v, want the oldest database with values %v", detail, values)
	}
}
