// Package profile provides a user's own profile: full name, bio, e-mail,
// password and avatar.
package profile

// Service is the profile domain.
type Service struct{}
