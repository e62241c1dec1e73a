package httpapi

// profileRoutes are the routes of a user's own profile.
func (s *Server) profileRoutes() []route { return nil }
