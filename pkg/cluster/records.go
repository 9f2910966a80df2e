package cluster

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The records of the members, members_removed and cluster buckets of an
// etcd 3.7 data file that are about the cluster: its members and a
// downgrade's target, as etcd writes them.

// MemberRemovedValue is the value of a members_removed entry.
var MemberRemovedValue = []byte("removed")

// Member is a member of the cluster as a value of the members bucket
// holds it: the JSON etcd writes for a member. Learners have IsLearner set; a member that has not published its
// name and client URLs yet has neither.
type Member struct {
	ID         uint64   `json:"id"`
	PeerURLs   []string `json:"peerURLs"`
	Name       string   `json:"name,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	IsLearner  bool     `json:"isLearner,omitempty"`
}

// MemberKey is the key of a member in the members and members_removed
// buckets: its ID in hexadecimal, without leading zeros.
func MemberKey(id uint64) []byte { return []byte(strconv.FormatUint(id, 16)) }

// ParseMemberKey decodes a key of the members or members_removed bucket.
func ParseMemberKey(k []byte) (uint64, error) {
	id, err := strconv.ParseUint(string(k), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("member key %q is not a hexadecimal ID", k)
	}
	return id, nil
}

// UnmarshalMember decodes a value of the members bucket.
func UnmarshalMember(b []byte) (Member, error) {
	var m Member
	if err := json.Unmarshal(b, &m); err != nil {
		return Member{}, fmt.Errorf("decode member: %w", err)
	}
	return m, nil
}

// Marshal encodes m as etcd writes it.
func (m Member) Marshal() []byte {
	b, _ := json.Marshal(m) // cannot fail: strings, numbers and a bool
	return b
}

// DowngradeInfo is the value of the cluster bucket's downgrade key.
type DowngradeInfo struct {
	TargetVersion string `json:"target-version"`
	Enabled       bool   `json:"enabled"`
}

// Marshal encodes d as etcd writes it.
func (d DowngradeInfo) Marshal() []byte {
	b, _ := json.Marshal(d) // cannot fail: a string and a bool
	return b
}

// UnmarshalDowngrade decodes the cluster bucket's downgrade value.
func UnmarshalDowngrade(b []byte) (DowngradeInfo, error) {
	var d DowngradeInfo
	if err := json.Unmarshal(b, &d); err != nil {
		return DowngradeInfo{}, fmt.Errorf("decode downgrade info: %w", err)
	}
	return d, nil
}
