// The shim that gives github.com/gaudi-go/gaudi/gohlml Habana's import
// path: a program switches with
//
//	replace github.com/HabanaAI/gohlml => <this directory>
//
// (see the repository's README, "Switching a gohlml program over").
module github.com/HabanaAI/gohlml

go 1.26.0

require github.com/gaudi-go/gaudi v0.0.0-00010101000000-000000000000
