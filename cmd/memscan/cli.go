package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/suggest"
)

// cmdLine is the command line of one subcommand: its flags, with the flags several commands share worded once
// here, its help in the one layout every command prints, and the one way a command line that does not parse is
// reported.
type cmdLine struct {
	*pflag.FlagSet
	help     helpDoc
	showHelp bool
	// formats are the --format values the command accepts, as formatFlag registered them.
	formats []string
}

// helpDoc is what `memscan CMD --help` prints around the flag list: usage, description, flags, examples and exit
// status, in that order.
type helpDoc struct {
	usage       []string // synopses, e.g. "memscan merge [flags] SUMMARIES...|DIR"
	description string   // paragraphs separated by blank lines
	examples    []string // command lines, optionally with a trailing "# comment"
	exits       []exitDoc
}

// exitDoc is one exit status a command can end with and what it means there.
type exitDoc struct {
	code    int
	meaning string
}

// newCmdLine starts the command line of the command name; stderr receives pflag's notes on retired spellings.
func newCmdLine(name string, help helpDoc, stderr io.Writer) *cmdLine {
	c := &cmdLine{FlagSet: pflag.NewFlagSet(name, pflag.ContinueOnError), help: help}
	// With ContinueOnError pflag returns every error instead of printing it; what it still prints are its notes
	// that a deprecated spelling was used, which read as memscan's other warnings.
	c.SetOutput(warningWriter{stderr})
	c.BoolVarP(&c.showHelp, "help", "h", false, "show this help")
	return c
}

// parse parses args. With --help it prints the help on stdout and reports helped; the command then returns err,
// which is nil.
func (c *cmdLine) parse(args []string, stdout io.Writer) (helped bool, err error) {
	if err := c.singleDashLong(args); err != nil {
		return false, err
	}
	if err := c.Parse(args); err != nil {
		return false, usageErrorf("%s: %v%s (see memscan %s --help)", c.Name(), err, c.flagHint(err), c.Name())
	}
	if c.showHelp {
		c.printHelp(stdout)
		return true, nil
	}
	return false, nil
}

// singleDashLong refuses a long flag written with one dash (-help, -out DIR): pflag would read it as a row of
// one-letter flags, -o with the value "ut", and go on with the wrong value or fail on a letter.
func (c *cmdLine) singleDashLong(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if f := c.Lookup(name); f != nil && !f.Hidden {
			return usageErrorf("%s: %s: long flags take two dashes: --%s (see memscan %s --help)", c.Name(), a, a[1:], c.Name())
		}
	}
	return nil
}

// flagHint offers the closest flags of the command for an unknown flag in err, as "; did you mean --no-plots?";
// a long name written with one dash (-out) is an unknown shorthand to pflag and gets its long spelling offered.
func (c *cmdLine) flagHint(err error) string {
	msg := err.Error()
	var word string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		word = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: ") && strings.Contains(msg, " in -"):
		word = msg[strings.LastIndex(msg, " in -")+len(" in -"):]
		word, _, _ = strings.Cut(word, "=")
		if len(word) < 2 {
			return ""
		}
	default:
		return ""
	}
	var names []string
	c.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	return suggest.Hint(word, names, func(n string) string { return "--" + n })
}

// outFlag registers --out as the results root of a command that writes run directories.
func (c *cmdLine) outFlag(p *string) { c.outFlagP(p, "") }

// outFlagP is outFlag that keeps a retired one-letter spelling working; pflag notes on stderr when it is used.
func (c *cmdLine) outFlagP(p *string, retiredShorthand string) {
	c.StringVarP(p, "out", retiredShorthand, "results", "results root: each run writes <out>/<YYYYMMDD_HHMMSS>_<name>/ and points <out>/latest at it")
	if retiredShorthand != "" {
		c.MarkShorthandDeprecated("out", "use --out instead")
	}
}

// filesDir says where a writing command puts its files, "" for nowhere: nowhere with --no-files, else --out
// when it can hold them. An --out that cannot is a usage error when it was given, or when the command would then
// print nothing; left at its default, say in a read-only working directory, the files are skipped with a warning
// and the command prints its report (reported), so a report asked for on stdout is not lost for files nobody
// named.
func (c *cmdLine) filesDir(out string, noFiles, reported bool, stderr io.Writer) (string, error) {
	if noFiles {
		return "", nil
	}
	err := checkOutDir(out)
	switch {
	case err == nil:
		return out, nil
	case c.Changed("out") || !reported:
		return "", usageErrorf("%s: --out %s: %v", c.Name(), out, err)
	}
	fmt.Fprintf(stderr, "memscan: warning: %s: writing no files: the default --out %s %v (give --out DIR, or --no-files)\n", c.Name(), out, err)
	return "", nil
}

// formatFlag registers --format, what the command prints (or writes): one of values; def "" makes it required.
func (c *cmdLine) formatFlag(p *string, def string, values ...string) {
	c.formats = values
	usage := "output format: " + orList(values)
	if def == "" {
		usage += " (required)"
	}
	c.StringVar(p, "format", def, usage)
}

// formatOK says whether v is one of the --format values formatFlag registered.
func (c *cmdLine) formatOK(v string) bool { return slices.Contains(c.formats, v) }

// nameFlag registers --name; derived says what the name is when none is given.
func (c *cmdLine) nameFlag(p *string, derived string) {
	c.StringVar(p, "name", "", "run name, the part of the run directory after its timestamp (default: "+derived+")")
}

// noPlotsFlag registers --no-plots.
func (c *cmdLine) noPlotsFlag(p *bool) { c.BoolVar(p, "no-plots", false, "do not draw the PNG charts") }

// noFilesFlag registers --no-files, the one spelling of "print only".
func (c *cmdLine) noFilesFlag(p *bool) { c.BoolVar(p, "no-files", false, "print only; write no files") }

// rulesFlag registers --rules; loadRules reads the file it names.
func (c *cmdLine) rulesFlag(p *string) {
	c.StringVar(p, "rules", "", "category rule file (YAML or JSON) that extends or overrides the built-in rules")
}

// loadRules reads a --rules file over the built-in rules; nil when path is empty (the built-in rules apply). A
// file that cannot be read or parsed is a usage error.
func (c *cmdLine) loadRules(path string) (*categorize.Rules, error) {
	if path == "" {
		return nil, nil
	}
	rules, err := categorize.LoadFile(path, categorize.Default())
	if err != nil {
		return nil, usageErrorf("%s: --rules: %v", c.Name(), err)
	}
	return rules, nil
}

// retire keeps old working as a deprecated spelling of the flag name: it sets the same value, is left out of the
// help, and pflag notes on stderr when it is used, so scripts keep working while people learn the new spelling.
func (c *cmdLine) retire(old, name string) {
	f := c.Lookup(name)
	alias := c.VarPF(f.Value, old, "", f.Usage)
	alias.NoOptDefVal, alias.DefValue = f.NoOptDefVal, f.DefValue
	c.MarkDeprecated(old, "use --"+name+" instead")
}

// describeDefault shows doc as the default of flag name in the help instead of its value on this machine (a CPU
// count, a memory size), so the help reads the same everywhere.
func (c *cmdLine) describeDefault(name, doc string) { c.Lookup(name).DefValue = doc }

// printHelp prints the help in the layout every command shares.
func (c *cmdLine) printHelp(w io.Writer) {
	var b strings.Builder
	for i, u := range c.help.usage {
		prefix := "       " // aligned under "Usage: "
		if i == 0 {
			prefix = "Usage: "
		}
		b.WriteString(prefix + u + "\n")
	}
	b.WriteString("\n" + strings.TrimSpace(c.help.description) + "\n\nFlags:\n" + flagUsages(c.FlagSet) + "\nExamples:\n")
	for _, e := range c.help.examples {
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("\nExit status:\n")
	for _, e := range c.help.exits {
		fmt.Fprintf(&b, "  %3d  %s\n", e.code, e.meaning)
	}
	io.WriteString(w, b.String())
}

// flagUsages lists the flags that are not hidden, sorted, with their defaults, as pflag's FlagUsages does but
// without the "[=true|false]" pflag appends to every boolean flag, which reads as if the flag wanted a value.
func flagUsages(fs *pflag.FlagSet) string {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" {
			left += " " + varname
		}
		switch {
		case slices.Contains([]string{"", "false", "0", "[]"}, f.DefValue):
		case f.Value.Type() == "string":
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		default:
			usage += " (default " + f.DefValue + ")"
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	})
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s   %s\n", width, r.left, r.usage)
	}
	return b.String()
}

// orList joins values as prose: "a", "a or b", "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// warningWriter prefixes each message written to it like memscan's warnings on stderr.
type warningWriter struct{ w io.Writer }

func (w warningWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, "memscan: warning: "+string(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
