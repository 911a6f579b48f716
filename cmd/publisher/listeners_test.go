package main

import "testing"

func TestConnBudget(t *testing.T) {
	tests := []struct {
		name      string
		fdLimit   uint64
		total     int
		perClient int
		want      connBudget
	}{
		{"a small limit", 1024, 0, 0, connBudget{fdLimit: 1024, reserve: 256, files: 128, admin: 96, metrics: 48, api: 624, perClient: DefaultConnsPerClient}},
		{"a common limit", 20000, 0, 0, connBudget{fdLimit: 20000, reserve: 4096, files: 2048, admin: 1024, metrics: 64, api: 14816, perClient: DefaultConnsPerClient}},
		{"a large limit: the reserve and the read API capped", 1 << 20, 0, 64, connBudget{fdLimit: 1 << 20, reserve: 4096, files: 2048, admin: 1024, metrics: 64, api: maxAPIConns, perClient: 64}},
		{"--max-connections sets the read API's", 1 << 20, 50000, 0, connBudget{fdLimit: 1 << 20, reserve: 4096, files: 2048, admin: 1024, metrics: 64, api: 50000, perClient: DefaultConnsPerClient}},
		{"--max-connections within the limit", 20000, 50000, 0, connBudget{fdLimit: 20000, reserve: 4096, files: 2048, admin: 1024, metrics: 64, api: 14816, perClient: DefaultConnsPerClient}},
		{"a tiny limit still serves", 300, 0, 0, connBudget{fdLimit: 300, reserve: 256, files: 128, admin: 5, metrics: 2, api: 37, perClient: DefaultConnsPerClient}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newConnBudget(tt.fdLimit, tt.total, tt.perClient)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if sum := got.reserve + got.admin + got.metrics + got.api; sum > int(tt.fdLimit) {
				t.Errorf("shares add up to %d, past the limit %d", sum, tt.fdLimit)
			}
		})
	}
}
