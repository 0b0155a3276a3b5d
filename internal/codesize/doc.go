// Package codesize holds only a test: it keeps every hand-written Go file of
// the module under 500 lines and every function under 120, the limits the
// project set itself (issue 26) so that each file has one concern and each
// function reads on a screen or two. Generated files (*.pb.go, files with a
// "Code generated" header) are exempt.
package codesize
