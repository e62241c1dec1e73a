package httpapi

import (
	"net/http"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// mfaRoutes are the routes of two-factor sign-in (docs/mfa.md): a user's
// own setup, and the admin's rule and reset.
func (s *Server) mfaRoutes() []route {
	return []route{
		{"POST", "/api/auth/mfa/setup", mfaSetup, s.handleMFASetup, docMFASetup},
		{"POST", "/api/auth/mfa/enable", mfaSetup, s.handleMFAEnable, docMFAEnable},
		{"POST", "/api/auth/mfa/disable", user, s.handleMFADisable, docMFADisable},
		{"GET", "/api/auth/mfa", mfaSetup, s.handleMFAStatus, docMFAStatus},
		{"GET", "/api/admin/settings/mfa", admin, s.handleAdminMFASetting, docAdminMFASetting},
		{"PUT", "/api/admin/settings/mfa", admin, s.handleAdminSetMFASetting, docAdminSetMFASetting},
		{"DELETE", "/api/admin/users/{id}/mfa", admin, s.handleAdminResetMFA, docAdminResetMFA},
	}
}

// mfaSetupResponse is the only answer that ever carries the secret.
type mfaSetupResponse struct {
	Secret     string `json:"secret"`
	OTPAuthURI string `json:"otpauth_uri"`
	QRCode     string `json:"qr_code"`
}

func (s *Server) handleMFASetup(w http.ResponseWriter, r *http.Request) error {
	set, err := s.auth.SetupMFA(r.Context(), currentUser(r))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, mfaSetupResponse{Secret: set.Secret, OTPAuthURI: set.URI, QRCode: auth.QRDataURI(set.QRCode)})
	return nil
}

// maxCodeLen bounds a code field: a TOTP code is 6 characters, a recovery
// code 14 with its dashes; the rest is room for spaces.
const maxCodeLen = 64

// checkCode adds a 422 at ["body", name] when a code given is too long to be one.
func checkCode(f *errs.Fields, name string, v *string) {
	if v != nil && len(*v) > maxCodeLen {
		f.Add([]any{"body", name}, "Code must be at most 64 characters long", "string_too_long")
	}
}

type mfaCodeRequest struct {
	Code *string `json:"code"`
}

type recoveryCodesResponse struct {
	RecoveryCodes []string `json:"recovery_codes"`
}

func (s *Server) handleMFAEnable(w http.ResponseWriter, r *http.Request) error {
	var req mfaCodeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "code", req.Code)
	checkCode(&f, "code", req.Code)
	if err := f.Err(); err != nil {
		return err
	}
	codes, err := s.auth.EnableMFA(r.Context(), currentUser(r), *req.Code)
	if err != nil {
		return errs.In("body", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, recoveryCodesResponse{RecoveryCodes: codes})
	return nil
}

type mfaDisableRequest struct {
	Password *string `json:"password"`
	Code     *string `json:"code"`
}

func (s *Server) handleMFADisable(w http.ResponseWriter, r *http.Request) error {
	var req mfaDisableRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "password", req.Password)
	requireField(&f, "code", req.Code)
	checkCode(&f, "code", req.Code)
	if err := f.Err(); err != nil {
		return err
	}
	if err := s.auth.DisableMFA(r.Context(), currentUser(r).ID, *req.Password, *req.Code); err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Two-factor sign-in is off"})
	return nil
}

// mfaStatusResponse is the caller's two-factor state, without any secret.
type mfaStatusResponse struct {
	Enabled           bool       `json:"enabled"`
	EnabledAt         *timestamp `json:"enabled_at"`
	RecoveryCodesLeft int        `json:"recovery_codes_left"`
	SetupRequired     bool       `json:"setup_required"`
}

func (s *Server) handleMFAStatus(w http.ResponseWriter, r *http.Request) error {
	u := currentUser(r)
	out := mfaStatusResponse{Enabled: u.MFAEnabledAt != nil}
	if u.MFAEnabledAt != nil {
		at := timestamp(*u.MFAEnabledAt)
		out.EnabledAt = &at
		n, err := s.auth.RecoveryCodesLeft(r.Context(), u.ID)
		if err != nil {
			return err
		}
		out.RecoveryCodesLeft = n
	}
	required, err := s.auth.MFARequiredOf(r.Context(), u)
	if err != nil {
		return err
	}
	out.SetupRequired = required
	writeJSON(w, http.StatusOK, out)
	return nil
}

// mfaSettingResponse is the install's two-factor rule.
type mfaSettingResponse struct {
	Required bool        `json:"required"`
	Roles    []auth.Role `json:"roles"`
}

func (s *Server) writeMFASetting(w http.ResponseWriter, r *http.Request) error {
	required, err := s.auth.MFARequired(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mfaSettingResponse{Required: required, Roles: []auth.Role{auth.RoleInstructor, auth.RoleAdmin}})
	return nil
}

func (s *Server) handleAdminMFASetting(w http.ResponseWriter, r *http.Request) error {
	return s.writeMFASetting(w, r)
}

func (s *Server) handleAdminSetMFASetting(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	required := q.boolean("required")
	if err := q.err(); err != nil {
		return err
	}
	if err := s.auth.SetMFARequired(r.Context(), required); err != nil {
		return err
	}
	return s.writeMFASetting(w, r)
}

func (s *Server) handleAdminResetMFA(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	u, err := s.auth.ResetMFA(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newUserResponse(u))
	return nil
}

// mfaHoldsBack reports whether the install's two-factor rule refuses u the
// route: an admin or instructor without two-factor sign-in reaches only the
// routes marked mfaSetup until they turn it on.
func (s *Server) mfaHoldsBack(r *http.Request, rt route, u *auth.User) error {
	if rt.access == mfaSetup {
		return nil
	}
	required, err := s.auth.MFARequiredOf(r.Context(), u)
	if err != nil {
		return err
	}
	if required {
		return auth.ErrMFASetupRequired
	}
	return nil
}
