// Package auto chooses a backend: the real NVIDIA driver when one is usable,
// else the software GPU. It is the one place that knows every backend, so the
// backends themselves stay independent of each other.
package auto
