package httpapi

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// The outcomes of a login, as tuxlab_logins_total counts them.
var loginOutcomes = []string{"ok", "bad_password", "inactive", "mfa_required", "bad_code", "rate_limited", "invalid", "error"}

// loginMetric counts login attempts by outcome.
type loginMetric struct{ total *prometheus.CounterVec }

func newLoginMetric(reg prometheus.Registerer) *loginMetric {
	m := &loginMetric{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tuxlab_logins_total",
		Help: "Login attempts by outcome: ok, bad_password (unknown user or wrong password), inactive, mfa_required (right password, no two-factor code), bad_code (wrong or used two-factor code), rate_limited, invalid (malformed request), error.",
	}, []string{"outcome"})}
	for _, o := range loginOutcomes {
		m.total.WithLabelValues(o) // every series from the start, at zero
	}
	reg.MustRegister(m.total)
	return m
}

// observe counts a login that ended with err (nil: it succeeded).
func (m *loginMetric) observe(err error) { m.total.WithLabelValues(loginOutcome(err)).Inc() }

// loginOutcome names how a login ended.
func loginOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, auth.ErrBadCredentials):
		return "bad_password"
	case errors.Is(err, auth.ErrInactive):
		return "inactive"
	case errors.Is(err, auth.ErrMFARequired):
		return "mfa_required"
	case errors.Is(err, auth.ErrMFACodeWrong), errs.Is(err, errs.Unauthenticated):
		return "bad_code" // ErrMFACodeWrong, or a secret that no longer opens
	case errs.Is(err, errs.TooManyRequests):
		return "rate_limited"
	case errs.Is(err, errs.Invalid), errs.Is(err, errs.TooLarge), errs.Is(err, errs.UnsupportedType):
		return "invalid"
	}
	return "error"
}
