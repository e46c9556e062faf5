// Package docscheck holds the test that keeps the links of the
// repository's documentation working for anyone who clones it: every
// relative link (and image, and reference definition) in README.md and
// docs/*.md must stay inside the repository and name a file or directory
// that exists, and no code span may name a path starting with "../",
// which would be above the repository root. Links with a scheme (http,
// https, mailto, file), autolinks included, point outside the repository
// too and fail: documents name their outside sources in words. The
// package has no API of its own.
package docscheck
