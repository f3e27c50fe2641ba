// Package units holds the few formatting primitives every memscan report shares, so that a number reads the same
// in the console, in Markdown, in a finding's text and on a chart: byte sizes ("761.6 MiB"), percentages
// ("36.85 %"), counted nouns ("1 run", "3 runs"), the median that reports quote and the indented JSON layout of
// every JSON file memscan writes. (Config files are read by package configfile.)
//
// It is a leaf: it imports only the standard library, so the packages that compute reports (analyze, static,
// calibrate, export) and those that render them (results, plots) can all use it. Rendering a whole report does
// not belong here; that is the job of results and plots.
package units
