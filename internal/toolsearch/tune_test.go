package toolsearch

import (
	"fmt"
	"os"
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
	variants := map[string]Options{
		"default":   {},
		"noctx":     {ServerContext: -1},
		"ctx0.3":    {ServerContext: 0.3},
		"ctx1":      {ServerContext: 1},
		"ctx2":      {ServerContext: 2},
		"baseline":  {Baseline: true},
		"nosyn":     {SynonymWeight: -1},
		"noboost":   {ServerBoost: -1},
		"nocover":   {Coverage: -1},
		"boost1":    {ServerBoost: 1},
		"cover0.8":  {Coverage: 0.8},
		"syn0.5":    {SynonymWeight: 0.5},
		"stext0":    {Weights: [numFields]float64{3, 2, 1, 0.5, 0.6, 0.001}},
		"stext0.3":  {Weights: [numFields]float64{3, 2, 1, 0.5, 0.6, 0.3}},
		"server1.2": {Weights: [numFields]float64{3, 2, 1, 0.5, 1.2, 0.1}},
		"name2":     {Weights: [numFields]float64{2, 2, 1, 0.5, 0.6, 0.1}},
	}
	if os.Getenv("MCP_GATEWAY_TUNE") == "grid" {
		for _, wn := range []float64{2, 3, 4} {
			for _, wd := range []float64{0.7, 1} {
				for _, ws := range []float64{0.8, 1.2, 2} {
					for _, syn := range []float64{0.2, 0.3, 0.4} {
						for _, cov := range []float64{0.3, 0.5, 0.7} {
							for _, boost := range []float64{0.3, 0.5, 1} {
								o := Options{Weights: [numFields]float64{wn, 2, wd, 0.5, ws, 0.1}, SynonymWeight: syn, Coverage: cov, ServerBoost: boost}
								m := evaluate(Build(docs, o), ids, tune, allTune)["tune all"]
								fmt.Printf("GRID %.3f %.3f name=%v desc=%v server=%v syn=%v cov=%v boost=%v\n", m.hit5/float64(m.n), m.mrr/float64(m.n), wn, wd, ws, syn, cov, boost)
							}
						}
					}
				}
			}
		}
		return
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
				fmt.Printf("MISS %s %q want %v got %v\n", q.Style, q.Q, q.Want, got)
			}
		}
	}
}
