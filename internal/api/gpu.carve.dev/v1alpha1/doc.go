// Package v1alpha1 is the claim config of carve's DRA driver,
// gpu.carve.dev/v1alpha1 ClaimConfig: the opaque parameters a DeviceClass
// or a claim gives the driver, its strict decoding (ParseConfig), its
// defaults and its checks (Resolve). The driver's prepare and its
// admission webhook both read configs through it, so that a config is
// accepted or refused by one rule.
//
// The tenant policy a config sets is ctl.Policy's: its fields are those of
// ctl.Policy that have a config tag, by that tag's name, so that a field
// added there is a field of the config too (policy.go).
package v1alpha1
