"""A faithful, fault-injecting Kubernetes list/watch API server on loopback, for tests."""
