package config

// Credential returns the key Recall sends upstream as "Authorization:
// Bearer <key>" for a client that authenticated with the bearer key
// client: the tenant's api_key when it has one, the client's own key when
// it has none (pass-through). It is the one decision of which credential
// goes upstream, for chat calls, passed-through calls and summaries alike;
// no other client credential ever goes with it. "" means none is sent.
func (u *Upstream) Credential(client string) string {
	if u.PassesClientKey() {
		return client
	}
	return u.APIKey.Reveal()
}

// PassesClientKey reports whether the client's own key goes upstream: the
// tenant has no api_key.
func (u *Upstream) PassesClientKey() bool { return u.APIKey == "" }
