package timeline

import "testing"

func TestProductName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target Target
		want   string
	}{
		{Target{Kind: "mariadb", Product: "MySQL"}, "MySQL"},
		{Target{Kind: "http"}, "http"}, // a run that recorded no product: its kind
		{Target{Kind: "redis", Product: "Redis"}, "Redis"},
	}
	for _, test := range tests {
		if got := test.target.ProductName(); got != test.want {
			t.Errorf("%+v.ProductName() = %q, want %q", test.target, got, test.want)
		}
	}
}
