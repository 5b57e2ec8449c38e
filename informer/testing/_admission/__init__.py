"""Admission webhooks: the registered Mutating/ValidatingWebhookConfigurations, called as the
apiserver calls them (``webhooks``), on the writes ``_serving.writes`` hands them."""
