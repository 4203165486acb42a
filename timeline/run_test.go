package timeline

import "testing"

func TestProductName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target Target
		want   string
	}{
		{Target{}, "PostgreSQL"}, // runs from before the kind was recorded
		{Target{Kind: "postgres"}, "PostgreSQL"},
		{Target{Kind: "mariadb", Product: "MySQL"}, "MySQL"},
		{Target{Kind: "redis"}, "Redis"}, // Redis runs recorded before Product
		{Target{Kind: "http"}, "http"},   // a kind without a known name: its kind
		{Target{Kind: "redis", Product: "Redis"}, "Redis"},
	}
	for _, test := range tests {
		if got := test.target.ProductName(); got != test.want {
			t.Errorf("%+v.ProductName() = %q, want %q", test.target, got, test.want)
		}
	}
}
