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
		{Target{Kind: "redis"}, "redis"},
	}
	for _, test := range tests {
		if got := test.target.ProductName(); got != test.want {
			t.Errorf("%+v.ProductName() = %q, want %q", test.target, got, test.want)
		}
	}
}
