package httpapi

// dashboardRoutes are the routes of the caller's dashboard.
func (s *Server) dashboardRoutes() []route { return nil }
