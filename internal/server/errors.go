package server

import (
	"errors"

	"github.com/cairnkv/cairn/internal/clusterversion"
	"github.com/cairnkv/cairn/pkg/cluster"
)

// Errors of a member, with etcd's texts; internal/api maps them to the gRPC
// errors clients expect.
var (
	ErrStopped             = errors.New("etcdserver: server stopped")
	ErrNoLeader            = errors.New("etcdserver: no leader")
	ErrTimeout             = errors.New("etcdserver: request timed out")
	ErrRequestTooLarge     = errors.New("etcdserver: request is too large")
	ErrNoSpace             = errors.New("etcdserver: mvcc: database space exceeded")
	ErrNotLearnerReady     = errors.New("etcdserver: can only promote a learner member which is in sync with leader")
	ErrMemberNotLearner    = errors.New("etcdserver: can only promote a learner member")
	ErrTooManyLearners     = errors.New("etcdserver: too many learner members in cluster")
	ErrMemberNotFound      = errors.New("etcdserver: member not found")
	ErrMemberExists        = errors.New("etcdserver: member ID already exist")
	ErrPeerURLExists       = errors.New("etcdserver: Peer URLs already exists")
	ErrMemberIDRemoved     = errors.New("etcdserver: member ID has been removed")
	ErrUnhealthy           = cluster.ErrUnhealthy
	ErrNotEnoughStarted    = cluster.ErrNotEnoughStarted
	ErrLearnerNotReady     = errors.New("etcdserver: rpc not supported for learner")
	ErrNotLeader           = errors.New("etcdserver: not leader")
	ErrLeaderChanged       = errors.New("etcdserver: leader changed")
	ErrBadLeaderTransferee = errors.New("etcdserver: bad leader transferee")
	ErrCorruptedDataDir    = errors.New("data directory is inconsistent")
	ErrBadPeerMessage      = errors.New("rejected peer message")
	ErrUnknownMethod       = errors.New("etcdserver: unknown method")

	ErrWrongDowngradeVersionFormat   = clusterversion.ErrWrongDowngradeVersionFormat
	ErrInvalidDowngradeTargetVersion = clusterversion.ErrInvalidDowngradeTargetVersion
	ErrClusterVersionUnavailable     = clusterversion.ErrClusterVersionUnavailable
	ErrDowngradeInProcess            = clusterversion.ErrDowngradeInProcess
)

// A proposal's timeout when a change of leader or a lost connection to
// peers likely caused it (timeoutError), as etcd words it.
var (
	ErrTimeoutDueToLeaderFail     = errors.New("etcdserver: request timed out, possibly due to previous leader failure")
	ErrTimeoutDueToConnectionLost = errors.New("etcdserver: request timed out, possibly due to connection lost")
)
