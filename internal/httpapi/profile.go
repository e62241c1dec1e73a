package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
	"tuxlab/internal/profile"
)

// profileRoutes are the routes of a user's own profile, and the public avatar files.
func (s *Server) profileRoutes() []route {
	return []route{
		{"GET", "/api/profile/me", mfaSetup, s.handleProfile, docProfile},
		{"PUT", "/api/profile/me", user, s.handleUpdateProfile, docUpdateProfile},
		{"PUT", "/api/profile/password", user, s.handleChangePassword, docChangePassword},
		{"POST", "/api/profile/avatar", user, s.handleUploadAvatar, docUploadAvatar},
		{"DELETE", "/api/profile/avatar", user, s.handleDeleteAvatar, docDeleteAvatar},
		{"GET", "/avatars/{name}", public, s.handleAvatar, docAvatar},
	}
}

// avatarPath is where an avatar file is served.
const avatarPath = "/avatars/"

type profileResponse struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	Email     string    `json:"email"`
	Role      auth.Role `json:"role"`
	FullName  string    `json:"full_name"`
	Bio       string    `json:"bio"`
	AvatarURL *string   `json:"avatar_url"`
	CreatedAt timestamp `json:"created_at"`
	UpdatedAt timestamp `json:"updated_at"`
}

func newProfileResponse(p *profile.Profile) profileResponse {
	r := profileResponse{ID: p.ID, Username: p.Username, Email: p.Email, Role: p.Role, FullName: p.FullName, Bio: p.Bio,
		CreatedAt: timestamp(p.CreatedAt), UpdatedAt: timestamp(p.UpdatedAt)}
	if p.Avatar != "" {
		url := avatarPath + p.Avatar
		r.AvatarURL = &url
	}
	return r
}

func (s *Server) handleProfile(w http.ResponseWriter, r *http.Request) error {
	p, err := s.profiles.Profile(r.Context(), currentUser(r).ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newProfileResponse(p))
	return nil
}

type updateProfileRequest struct {
	FullName *string `json:"full_name"`
	Bio      *string `json:"bio"`
	Email    *string `json:"email"`
}

func (s *Server) handleUpdateProfile(w http.ResponseWriter, r *http.Request) error {
	var req updateProfileRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p, err := s.profiles.Update(r.Context(), currentUser(r).ID, profile.Update{FullName: req.FullName, Bio: req.Bio, Email: req.Email})
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, newProfileResponse(p))
	return nil
}

type changePasswordRequest struct {
	CurrentPassword *string `json:"current_password"`
	NewPassword     *string `json:"new_password"`
}

type passwordChangedResponse struct {
	Detail      string `json:"detail"`
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
}

func (s *Server) handleChangePassword(w http.ResponseWriter, r *http.Request) error {
	var req changePasswordRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "current_password", req.CurrentPassword)
	requireField(&f, "new_password", req.NewPassword)
	if err := f.Err(); err != nil {
		return err
	}
	token, err := s.profiles.ChangePassword(r.Context(), currentUser(r).ID, *req.CurrentPassword, *req.NewPassword)
	if err != nil {
		return errs.In("body", err)
	}
	if stateOf(r.Context()).viaCookie {
		s.setSessionCookies(w, r, token) // the old cookie's token no longer works
	}
	writeJSON(w, http.StatusOK, passwordChangedResponse{Detail: "Password changed", AccessToken: token, TokenType: "bearer"})
	return nil
}

// multipartSlack is room for a multipart body's boundaries, part headers and
// small fields around the file itself.
const multipartSlack = 64 << 10

var (
	errNotMultipart = errs.Field([]any{"body"}, "Send the image as multipart/form-data with a field named file", "value_error")
	errBadMultipart = errs.Field([]any{"body"}, "The multipart/form-data body is malformed", "value_error")
	errFileMissing  = errs.Field([]any{"body", "file"}, "Field required: the image, as a multipart file field named file", "missing")
)

func (s *Server) handleUploadAvatar(w http.ResponseWriter, r *http.Request) error {
	data, err := readAvatarFile(w, r)
	if err != nil {
		return err
	}
	p, err := s.profiles.SetAvatar(r.Context(), currentUser(r).ID, data)
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, newProfileResponse(p))
	return nil
}

// readAvatarFile returns the multipart field "file" of the request, read up to
// one byte past the limit so an oversize file is told apart. Other fields are
// skipped; the whole body is bounded too.
func readAvatarFile(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" {
		return nil, errNotMultipart
	}
	r.Body = http.MaxBytesReader(w, r.Body, profile.MaxAvatarBytes+multipartSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, errNotMultipart
	}
	for {
		part, err := mr.NextPart()
		switch {
		case errors.Is(err, io.EOF):
			return nil, errFileMissing
		case isTooLarge(err):
			return nil, uploadTooLarge(err)
		case err != nil:
			return nil, errBadMultipart
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		data, err := io.ReadAll(io.LimitReader(part, profile.MaxAvatarBytes+1))
		switch {
		case isTooLarge(err):
			return nil, uploadTooLarge(err)
		case err != nil:
			return nil, errBadMultipart
		case len(data) > profile.MaxAvatarBytes:
			return nil, profile.ErrAvatarTooLarge
		}
		return data, nil
	}
}

// uploadTooLarge tells which limit a body read ran into: the avatar's, or the
// server's limit on every request body when that one is lower.
func uploadTooLarge(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) && tooBig.Limit < profile.MaxAvatarBytes {
		return errBodyTooLarge
	}
	return profile.ErrAvatarTooLarge
}

func (s *Server) handleDeleteAvatar(w http.ResponseWriter, r *http.Request) error {
	p, err := s.profiles.DeleteAvatar(r.Context(), currentUser(r).ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newProfileResponse(p))
	return nil
}

// handleAvatar serves an avatar file. Names are random and never reused, so
// the file may be cached for a year; anything but a stored avatar's name is 404.
func (s *Server) handleAvatar(w http.ResponseWriter, r *http.Request) error {
	f, err := s.profiles.OpenAvatar(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	w.WriteHeader(http.StatusOK)
	io.Copy(w, f)
	return nil
}
