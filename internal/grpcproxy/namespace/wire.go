package namespace

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// fieldPath names a bytes field by its field numbers, from the outer
// message in.
type fieldPath []protowire.Number

// wireRule is where the keys are in the messages of one Election or Lock
// method (etcd's v3election.proto and v3lock.proto).
type wireRule struct {
	request, response []fieldPath
}

var (
	leaderKeyName = fieldPath{1, 1} // ProclaimRequest, ResignRequest: leader.name
	leaderKeyKey  = fieldPath{1, 2} // leader.key
)

var wireRules = map[string]wireRule{
	// CampaignRequest.name; CampaignResponse.leader.name and .key.
	"/v3electionpb.Election/Campaign": {request: []fieldPath{{1}}, response: []fieldPath{{2, 1}, {2, 2}}},
	"/v3electionpb.Election/Proclaim": {request: []fieldPath{leaderKeyName, leaderKeyKey}},
	// LeaderRequest.name; LeaderResponse.kv.key.
	"/v3electionpb.Election/Leader":  {request: []fieldPath{{1}}, response: []fieldPath{{2, 1}}},
	"/v3electionpb.Election/Observe": {request: []fieldPath{{1}}, response: []fieldPath{{2, 1}}},
	"/v3electionpb.Election/Resign":  {request: []fieldPath{leaderKeyName, leaderKeyKey}},
	// LockRequest.name; LockResponse.key; UnlockRequest.key.
	"/v3lockpb.Lock/Lock":   {request: []fieldPath{{1}}, response: []fieldPath{{2}}},
	"/v3lockpb.Lock/Unlock": {request: []fieldPath{{1}}},
}

// HasWireRule says whether method is an Election or Lock method whose
// messages WireRequest and WireResponse rewrite.
func HasWireRule(method string) bool {
	_, ok := wireRules[method]
	return ok
}

// WireRequest adds the prefix to the names and keys of an encoded request
// of an Election or Lock method.
func (p Prefix) WireRequest(method string, msg []byte) ([]byte, error) {
	return rewrite(msg, wireRules[method].request, p.Key)
}

// WireResponse strips the prefix from the names and keys of an encoded
// response of an Election or Lock method.
func (p Prefix) WireResponse(method string, msg []byte) ([]byte, error) {
	return rewrite(msg, wireRules[method].response, p.Strip)
}

func rewrite(msg []byte, paths []fieldPath, f func([]byte) []byte) ([]byte, error) {
	var err error
	for _, path := range paths {
		if msg, err = rewriteField(msg, path, f); err != nil {
			return nil, err
		}
	}
	return msg, nil
}

var errMalformed = errors.New("malformed message")

// rewriteField returns msg with the bytes field at path passed through f,
// and every other field as it was. A field of path that is absent stays
// absent: a message that names no key has none to change.
func rewriteField(msg []byte, path fieldPath, f func([]byte) []byte) ([]byte, error) {
	out := make([]byte, 0, len(msg)+16)
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, errMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return nil, errMalformed
		}
		field := msg[:n+m]
		msg = msg[n+m:]
		if num != path[0] || typ != protowire.BytesType {
			out = append(out, field...)
			continue
		}
		val, _ := protowire.ConsumeBytes(field[n:])
		if len(path) == 1 {
			val = f(val)
		} else {
			var err error
			if val, err = rewriteField(val, path[1:], f); err != nil {
				return nil, err
			}
		}
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, val)
	}
	return out, nil
}
