"""TLS for the test server: a self-signed CA and a serving certificate it signs."""
