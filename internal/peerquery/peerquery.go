// Package peerquery carries the questions a follower asks its leader over
// the peer port, as JSON: only the leader's lessor tracks expiry, so lease
// keep-alives and time-to-live queries that reach a follower go to the
// leader; so does the promotion of a learner, which only the leader can
// judge.
package peerquery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/cairnkv/cairn/internal/lease"
	"github.com/cairnkv/cairn/internal/transport"
)

// The paths of the peer port the questions go to.
const (
	PathLeaseRenew = "/lease/renew"
	PathLeaseTTL   = "/lease/ttl"
	PathPromote    = "/members/promote"
)

// Query is a question: the lease or member it is about.
type Query struct {
	ID   int64 `json:"id"`
	Keys bool  `json:"keys,omitempty"`
}

// Answer is the leader's answer; Error is the text of its error, if any.
type Answer struct {
	TTL   int64         `json:"ttl"`
	Info  lease.TTLInfo `json:"info"`
	Error string        `json:"error,omitempty"`
}

// Ask posts q to url (the leader's peer URL and a path) on behalf of a
// member of cluster clusterID, and returns the answer. err is about the
// asking; the leader's own error is in the answer.
func Ask(ctx context.Context, c *http.Client, url string, clusterID uint64, q Query) (Answer, error) {
	var ans Answer
	body, _ := json.Marshal(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ans, err
	}
	req.Header.Set(transport.HeaderClusterID, strconv.FormatUint(clusterID, 16))
	resp, err := c.Do(req)
	if err != nil {
		return ans, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&ans); err != nil {
		return ans, fmt.Errorf("decode the answer: %w", err)
	}
	return ans, nil
}

// Serve answers a question with fn, and refuses one from a member of
// another cluster than clusterID.
func Serve(w http.ResponseWriter, r *http.Request, clusterID uint64, fn func(Query) (Answer, error)) {
	if r.Header.Get(transport.HeaderClusterID) != strconv.FormatUint(clusterID, 16) {
		http.Error(w, "cluster ID mismatch", http.StatusPreconditionFailed)
		return
	}
	var q Query
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ans, err := fn(q)
	if err != nil {
		ans.Error = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}
