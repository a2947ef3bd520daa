package toolsearch

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

func allTune(int) string { return splitTune }

// TestSearchTune prints the tuning split's metrics for variants of the
// ranker's options (MCP_GATEWAY_TUNE=1): the held-out split is never
// printed here.
func TestSearchTune(t *testing.T) {
	if os.Getenv("MCP_GATEWAY_TUNE") == "" {
		t.Skip("set MCP_GATEWAY_TUNE=1 to print the tuning split's metrics per variant")
	}
	docs, ids, _, queries := loadBench(t)
	var tune []benchQuery
	for i, q := range queries {
		if splitOf(i) == splitTune {
			tune = append(tune, q)
		}
	}
	w := func(lead float64) [numFields]float64 {
		return [numFields]float64{fieldName: 3, fieldTitle: 2, fieldDescription: 0.7, fieldParams: 0.3, fieldServer: 1.2, fieldServerText: 0.1, fieldLead: lead}
	}
	variants := map[string]Options{
		"default":   {},
		"nohint":    {HintWeight: -1},
		"hint0.5":   {HintWeight: 0.5},
		"syn0.5":    {SynonymWeight: 0.5},
		"syn0.6":    {SynonymWeight: 0.6},
		"baseline":  {Baseline: true},
		"nosyn":     {SynonymWeight: -1},
		"nc0.1":     {NameCover: 0.1},
		"nc0.2":     {NameCover: 0.2},
		"nc0.3":     {NameCover: 0.3},
		"nc0.5":     {NameCover: 0.5},
		"noprior":   {SizePrior: -1},
		"nolead":    {Weights: w(0)},
		"syn0.3":    {SynonymWeight: 0.3},
		"prior0.2":  {SizePrior: 0.2},
		"prior0.3":  {SizePrior: 0.3},
		"prior0.5":  {SizePrior: 0.5},
		"lead0.5":   {Weights: w(0.5)},
		"lead1":     {Weights: w(1)},
		"lead2":     {Weights: w(2)},
		"params0.5": {Weights: [numFields]float64{3, 2, 0.7, 0.5, 1.2, 0.1, 0.5}},
		"desc1":     {Weights: [numFields]float64{3, 2, 1, 0.3, 1.2, 0.1, 0.5}},
	}
	if os.Getenv("MCP_GATEWAY_TUNE") == "weights" {
		for _, name := range []float64{2, 3, 4} {
			for _, desc := range []float64{0.5, 0.7, 1} {
				for _, params := range []float64{0.2, 0.3, 0.5} {
					for _, lead := range []float64{0.5, 1, 2} {
						for _, srv := range []float64{0.6, 1.2} {
							o := Options{Weights: [numFields]float64{name, 2, desc, params, srv, 0.1, lead}}
							m := evaluate(Build(docs, o), ids, tune, allTune)["tune all"]
							fmt.Printf("GRID %.3f %.3f name=%v desc=%v params=%v lead=%v server=%v\n", m.hit5/float64(m.n), m.mrr/float64(m.n), name, desc, params, lead, srv)
						}
					}
				}
			}
		}
		return
	}
	if os.Getenv("MCP_GATEWAY_TUNE") == "grid" {
		for _, syn := range []float64{0.4, 0.5, 0.6} {
			for _, ctx := range []float64{0.3, 0.5, 1} {
				for _, cov := range []float64{0.3, 0.5, 0.7} {
					for _, nc := range []float64{0.2, 0.3, 0.4} {
						for _, prior := range []float64{0.1, 0.2} {
							o := Options{SynonymWeight: syn, ServerContext: ctx, Coverage: cov, NameCover: nc, SizePrior: prior}
							m := evaluate(Build(docs, o), ids, tune, allTune)["tune all"]
							fmt.Printf("GRID %.3f %.3f syn=%v ctx=%v cov=%v namecover=%v prior=%v\n", m.hit5/float64(m.n), m.mrr/float64(m.n), syn, ctx, cov, nc, prior)
						}
					}
				}
			}
		}
		return
	}
	if os.Getenv("MCP_GATEWAY_TUNE") == "misses" {
		variants = map[string]Options{"default": {}}
	}
	for name, o := range variants {
		m := evaluate(Build(docs, o), ids, tune, allTune)
		fmt.Println(m["tune all"].row(name), m["tune paraphrase"].row(name+" para"), m["tune precise"].row(name+" precise"))
	}
	if os.Getenv("MCP_GATEWAY_TUNE") == "misses" {
		ix := Build(docs, Options{})
		for _, q := range tune {
			hits := ix.Search(q.Q, 5, nil)
			found := false
			var got []string
			for _, h := range hits {
				got = append(got, ids[h.Doc])
				for _, w := range q.Want {
					found = found || w == ids[h.Doc]
				}
			}
			if !found {
				rank := 0
				for r, h := range ix.Search(q.Q, 50, nil) {
					if slices.Contains(q.Want, ids[h.Doc]) && rank == 0 {
						rank = r + 1
					}
				}
				fmt.Printf("MISS %s %q want %v (rank %d) got %v\n", q.Style, q.Q, q.Want, rank, got)
			}
		}
	}
}
