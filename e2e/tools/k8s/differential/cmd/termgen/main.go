// Command termgen prints the differential tier's generated annotation values, one JSON
// line {"text": "..."} each, for the e2e scenario that sends them through the real API
// server and webhook (e2e/tests/differential_test.go). Only valid UTF-8 is printed: an
// annotation sent through the API server cannot hold anything else.
//
//	go run ./differential/cmd/termgen -seed 42 -n 300
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"unicode/utf8"

	"kmt.local/e2e/tools/k8s/differential"
)

func main() {
	seed := flag.Int64("seed", 1, "generator seed")
	n := flag.Int("n", 300, "number of texts")
	flag.Parse()
	g := differential.NewGen(*seed)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for printed := 0; printed < *n; {
		text := g.Text(true)
		if !utf8.Valid(text) {
			continue
		}
		b, err := json.Marshal(struct {
			Text string `json:"text"`
		}{string(text)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		w.Write(b)
		w.WriteByte('\n')
		printed++
	}
}
