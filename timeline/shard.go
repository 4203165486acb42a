package timeline

import "time"

// ShardInfo says in run.json that a run is one shard of a run split over
// several processes (firedrill run --shard i/N), or the merge of all of
// them (firedrill merge: Merged lists the shards' directories).
type ShardInfo struct {
	Index int `json:"index"` // 0-based
	Count int `json:"count"`
	// StartAt is the common moment the shards started their load
	// (--start-at); zero when not given.
	StartAt time.Time `json:"start_at,omitzero"`
	// Run names the split run the shards share: scenario, start and
	// number of shards. Merge refuses shards of different runs.
	Run string `json:"run,omitempty"`
	// Began is when the shard's load actually began (its timeline's 0):
	// StartAt, or a little later for a shard that was late. Merge puts
	// every shard's timeline on StartAt's clock with it.
	Began time.Time `json:"began,omitzero"`
	// Merged are the directories of the shards a merged run was made of,
	// in shard order; empty in a shard's own run.json.
	Merged []string `json:"merged,omitempty"`
}
