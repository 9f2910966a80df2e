package api

import (
	"encoding/json"
	"net/http"

	"github.com/cairnkv/cairn/internal/version"
)

// serveVersion answers /version as etcd does: the server's release, the
// cluster version and the storage version.
func (a *API) serveVersion(w http.ResponseWriter, r *http.Request) {
	cluster := a.s.ClusterVersion()
	if cluster == "" {
		cluster = "not_decided"
	}
	b, _ := json.Marshal(struct { // cannot fail: strings
		Server  string `json:"etcdserver"`
		Cluster string `json:"etcdcluster"`
		Storage string `json:"storage"`
	}{version.ServerVersion, cluster, a.s.StorageVersion()})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
