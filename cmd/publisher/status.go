package main

import (
	"context"

	"github.com/opencarte/publisher/cmd/publisher/telemetry"
)

func (m *Main) status(ctx context.Context) map[string]any {
	out := map[string]any{"roles": rolesOf(m.Config)}
	if d := m.loops.Snapshot(); len(d) > 0 {
		out["degraded"] = d
	}
	p := m.Projector()
	if p != nil {
		out["projected_sequence"] = p.Position()
	}
	if seq, err := m.Store.LastStreamSequence(ctx); err == nil {
		out["log_sequence"] = seq
		if p != nil {
			out["projector_behind_records"] = seq - min(seq, p.Position())
		}
	}
	if g, _ := m.gens.watch.State(); true {
		out["documents_generation"] = g.Served()
		if g.Rebuild != nil {
			out["rebuild"] = g.Rebuild
		}
	}
	if p, err := m.Store.Placement(ctx); err == nil && p.Leader != "" {
		out["log_placement"] = p
	}
	if m.Mirror != nil {
		out["mirror"] = m.Mirror.Stats()
	}
	if m.mirrorLag != nil {
		out["mirror_behind_seconds"] = m.mirrorLag.Behind().Seconds()
	}
	out["memory"] = telemetry.Memory()
	if m.storage != nil {
		st := m.storage.Status()
		storage := map[string]any{"used_bytes": st.Used, "reserve_bytes": st.Reserve, "writes_refused": st.Full}
		if st.Limit > 0 {
			storage["limit_bytes"] = st.Limit
		}
		if st.VolumeSize > 0 {
			storage["volume_free_bytes"], storage["volume_size_bytes"] = st.VolumeFree, st.VolumeSize
		}
		if st.Full {
			storage["reason"] = st.Reason
		}
		if st.Err != nil {
			storage["error"] = st.Err.Error()
		}
		out["storage"] = storage
	}
	if m.ClockRole != nil {
		out["clock"] = m.ClockRole.Status()
	}
	if m.Webhooks != nil {
		if st, err := m.Webhooks.Stats(ctx); err == nil {
			out["webhooks"] = st
		} else {
			out["webhooks_error"] = err.Error()
		}
	}
	return out
}
