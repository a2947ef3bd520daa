// Package logfile holds the background gateway's log file: opening it
// (Open), reading its last lines for a failure message (Tail), and a
// Writer that batches the per-call audit lines into few writes.
package logfile
