"""pytest fixtures for testing against the informer test API server."""
