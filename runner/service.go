package runner

import (
	"time"
)

// throughService puts a workload's requests through its service: the
// engine's clients become the service's callers (enough for every
// request its threads and queues can hold, under a rate), its pool the
// service's connections (the service bounds the wait itself).
func (r *run) throughService(wr *workloadRun, tr *targetRun, rateModel bool) {
	svc := r.services.Service(wr.spec.Service)
	target := tr.name
	if target == "" {
		target = "db"
	}
	wr.cfg.Gate = svc.Gate(target)
	wr.cfg.Pool = svc.Connections()
	wr.cfg.PoolTimeout = time.Hour
	if !rateModel {
		return // a closed model's callers are the workload's clients
	}
	callers := max(wr.cfg.Clients, svc.Callers()+8)
	wr.cfg.Clients = callers
	if inner := wr.cfg.Shape; inner != nil {
		wr.cfg.Shape = func(elapsed time.Duration) (int, float64) {
			_, rate := inner(elapsed)
			return callers, rate
		}
	}
}
