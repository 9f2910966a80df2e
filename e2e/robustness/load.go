package robustness

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// keyPrefix holds every key the load writes; watchers watch it.
const keyPrefix = "/rb/"

// numKeys is how many keys the load spreads over: few, so that operations
// conflict.
const numKeys = 8

// leaseTTL is long enough that no lease of the load expires during a run: a
// lease ends by being revoked, which the model follows.
const leaseTTL = 600

// opTimeout bounds every client request.
const opTimeout = 2 * time.Second

func keyName(i int) string { return fmt.Sprintf("%sk%d", keyPrefix, i) }

// op is one request of the history: what was asked, what came back, when.
type op struct {
	Client   int    `json:"client"` // porcupine's client: a new one after an unknown outcome
	Worker   int    `json:"worker"`
	Endpoint string `json:"endpoint"`
	In       input  `json:"in"`
	Out      output `json:"out"`
	Call     int64  `json:"call"`   // ns since the run started
	Return   int64  `json:"return"` // math.MaxInt64 when the outcome is unknown
}

// history collects the operations of every worker.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []op
	ids   int // porcupine client IDs handed out
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return time.Since(h.start).Nanoseconds() }

func (h *history) newClient() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids++
	return h.ids - 1
}

func (h *history) add(o op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, o)
}

func (h *history) all() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...)
}

// loadConfig bounds the load.
type loadConfig struct {
	workers  int
	duration time.Duration
	maxOps   int           // per worker
	interval time.Duration // between two requests of a worker
}

// worker is one client of the load.
type worker struct {
	id       int
	cli      *clientv3.Client
	endpoint string
	h        *history
	rnd      *rand.Rand
	client   int // current porcupine client ID
	n        int // values written
	modRev   map[string]int64
	lease    clientv3.LeaseID
}

// runLoad runs cfg.workers clients until the duration is over or each has
// done maxOps requests; worker i is pinned to one member, except every
// fourth, which uses them all.
func runLoad(ctx context.Context, c *cluster, h *history, cfg loadConfig, seed int64) error {
	var ws []*worker
	for i := range cfg.workers {
		ms := c.list()
		if i%4 != 3 {
			ms = c.list()[i%len(c.list()) : i%len(c.list())+1]
		}
		cli, err := c.client(ms...)
		if err != nil {
			return err
		}
		defer cli.Close()
		ep := "all"
		if len(ms) == 1 {
			ep = ms[0].name
		}
		ws = append(ws, &worker{id: i, cli: cli, endpoint: ep, h: h, client: h.newClient(),
			rnd: rand.New(rand.NewPCG(uint64(seed), uint64(i))), modRev: map[string]int64{}})
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			tick := time.NewTicker(cfg.interval)
			defer tick.Stop()
			for range cfg.maxOps {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				w.one(ctx)
			}
		})
	}
	wg.Wait()
	return nil
}

// one does a request chosen at random.
func (w *worker) one(ctx context.Context) {
	key := keyName(w.rnd.IntN(numKeys))
	switch p := w.rnd.IntN(100); {
	case p < 30:
		w.do(ctx, input{Kind: opPut, Key: key, Value: w.value()})
	case p < 50:
		w.do(ctx, input{Kind: opGet, Key: key})
	case p < 60:
		w.do(ctx, input{Kind: opRange, Key: keyPrefix})
	case p < 75:
		w.do(ctx, input{Kind: opTxn, Key: key, Value: w.value(), ModRev: w.modRev[key]})
	case p < 85:
		w.do(ctx, input{Kind: opDelete, Key: key})
	default:
		w.leaseStep(ctx, key)
	}
}

func (w *worker) value() string {
	w.n++
	return fmt.Sprintf("w%d-%d", w.id, w.n)
}

// leaseStep grants a lease and attaches two keys to it, or revokes the
// lease it holds (deleting those keys, in one revision, unless they were
// overwritten or deleted meanwhile).
func (w *worker) leaseStep(ctx context.Context, key string) {
	if w.lease != 0 {
		w.do(ctx, input{Kind: opRevoke, Lease: int64(w.lease)})
		w.lease = 0
		return
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	resp, err := w.cli.Grant(cctx, leaseTTL)
	cancel()
	if err != nil {
		return
	}
	w.lease = resp.ID
	other := keyName(w.rnd.IntN(numKeys))
	w.do(ctx, input{Kind: opPut, Key: key, Value: w.value(), Lease: int64(resp.ID)})
	if other != key {
		w.do(ctx, input{Kind: opPut, Key: other, Value: w.value(), Lease: int64(resp.ID)})
	}
}

// do sends one request and records it.
func (w *worker) do(ctx context.Context, in input) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	call := w.h.now()
	out, err := w.send(cctx, in)
	ret := w.h.now()
	if err != nil {
		if in.Kind == opGet || in.Kind == opRange {
			return // a failed read has no effect and says nothing
		}
		out = output{Unknown: true, Err: err.Error()}
		ret = math.MaxInt64
	}
	w.h.add(op{Client: w.client, Worker: w.id, Endpoint: w.endpoint, In: in, Out: out, Call: call, Return: ret})
	if err != nil {
		w.client = w.h.newClient() // the open operation overlaps everything after it
	}
	for _, v := range out.KVs {
		w.modRev[v.Key] = v.ModRev
	}
	if !out.Unknown && (in.Kind == opPut || (in.Kind == opTxn && out.Succeeded)) {
		w.modRev[in.Key] = out.Rev
	}
}

func (w *worker) send(ctx context.Context, in input) (output, error) {
	switch in.Kind {
	case opPut:
		var opts []clientv3.OpOption
		if in.Lease != 0 {
			opts = append(opts, clientv3.WithLease(clientv3.LeaseID(in.Lease)))
		}
		resp, err := w.cli.Put(ctx, in.Key, in.Value, opts...)
		if err != nil {
			return output{}, err
		}
		return output{Rev: resp.Header.Revision}, nil
	case opGet, opRange:
		var opts []clientv3.OpOption
		if in.Kind == opRange {
			opts = append(opts, clientv3.WithPrefix())
		}
		resp, err := w.cli.Get(ctx, in.Key, opts...)
		if err != nil {
			return output{}, err
		}
		out := output{Rev: resp.Header.Revision}
		for _, k := range resp.Kvs {
			out.KVs = append(out.KVs, kv{string(k.Key), string(k.Value), k.ModRevision, k.Lease})
		}
		return out, nil
	case opTxn:
		resp, err := w.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(in.Key), "=", in.ModRev)).
			Then(clientv3.OpPut(in.Key, in.Value)).
			Else(clientv3.OpGet(in.Key)).Commit()
		if err != nil {
			return output{}, err
		}
		out := output{Rev: resp.Header.Revision, Succeeded: resp.Succeeded}
		if !resp.Succeeded && len(resp.Responses) == 1 {
			for _, k := range resp.Responses[0].GetResponseRange().Kvs {
				out.KVs = append(out.KVs, kv{string(k.Key), string(k.Value), k.ModRevision, k.Lease})
			}
		}
		return out, nil
	case opDelete:
		resp, err := w.cli.Delete(ctx, in.Key)
		if err != nil {
			return output{}, err
		}
		return output{Rev: resp.Header.Revision, Deleted: resp.Deleted}, nil
	case opRevoke:
		resp, err := w.cli.Revoke(ctx, clientv3.LeaseID(in.Lease))
		if err != nil {
			return output{}, err
		}
		return output{Rev: resp.Header.Revision}, nil
	}
	return output{}, fmt.Errorf("unknown operation %q", in.Kind)
}

// quietLogger keeps the client library's retry warnings out of the test
// output: the faults make many.
func quietLogger() *zap.Logger { return zap.NewNop() }
