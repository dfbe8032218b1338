//go:build !linux

package main

// lockdown does nothing outside Linux, whose prctl and capability sets
// it uses.
func lockdown() error { return nil }
