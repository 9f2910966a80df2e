package auth

import (
	"math"
	"time"
)

// The claims of a parsed token, checked as etcd checks them.

// identity returns the user and auth revision the claims name: username
// must be a string, revision a number (a fraction is dropped).
func (p parsedJWT) identity() (Info, bool) {
	user, ok := p.claims["username"].(string)
	if !ok {
		return Info{}, false
	}
	rev, ok := p.claims["revision"].(float64)
	if !ok || !(rev >= 0 && rev < math.MaxUint64) {
		return Info{}, false
	}
	return Info{Username: user, Revision: uint64(rev)}, true
}

// liveAt reports whether the claims hold at now: before "exp" and not
// before "nbf", each checked when present (and then a number).
func (p parsedJWT) liveAt(now time.Time) bool {
	if v, ok := p.claims["exp"]; ok {
		exp, ok := numericDate(v)
		if !ok || !now.Before(exp) {
			return false
		}
	}
	if v, ok := p.claims["nbf"]; ok {
		nbf, ok := numericDate(v)
		if !ok || now.Before(nbf) {
			return false
		}
	}
	return true
}

// maxNumericDate bounds the seconds of a date to what time.Time holds.
const maxNumericDate = 1 << 62

// numericDate is a JWT date: seconds since the epoch, maybe fractional.
func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || !(f > -maxNumericDate && f < maxNumericDate) {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}
