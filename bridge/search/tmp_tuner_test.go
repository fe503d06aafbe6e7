package search

import (
	"fmt"
	"hash/fnv"
	"testing"
)

func splitQueries(qs []Query) (tune, hold []Query) {
	for _, q := range qs {
		h := fnv.New32a()
		h.Write([]byte(q.ID))
		if h.Sum32()%2 == 0 {
			tune = append(tune, q)
		} else {
			hold = append(hold, q)
		}
	}
	return
}

func TestTmpTune(t *testing.T) {
	type ds struct {
		ix         *Index
		tune, hold []Query
	}
	var sets []ds
	for _, name := range []string{"bfcl", "metatool"} {
		qs, _ := LoadQueries("testdata/" + name + "/queries.jsonl")
		tu, ho := splitQueries(qs)
		sets = append(sets, ds{loadIndex(t, "testdata/"+name, Options{Cutoff: -1}), tu, ho})
	}
	kw, _ := LoadQueries("testdata/keyword-queries.jsonl")
	kwix := loadIndex(t, "testdata/reference-servers", Options{Cutoff: -1})
	eval := func(o Options, hold bool) (float64, []Metrics) {
		sum := 0.0
		var ms []Metrics
		for _, s := range sets {
			s.ix.opts = o
			qs := s.tune
			if hold {
				qs = s.hold
			}
			m := Evaluate(s.ix, qs, 10)
			ms = append(ms, m)
			sum += m.Recall5
		}
		kwix.opts = o
		ms = append(ms, Evaluate(kwix, kw, 10))
		return sum / 2, ms
	}
	o := Options{Cutoff: -1}.withDefaults()
	type param struct {
		name string
		p    *float64
		vals []float64
	}
	var ps []param
	names := []string{"name", "server", "title", "desc", "pname", "pdesc"}
	for f := range o.Fields {
		ps = append(ps, param{"w." + names[f], &o.Fields[f].Weight, []float64{0, 0.25, 0.5, 1, 1.5, 2, 3, 4, 6}})
		ps = append(ps, param{"b." + names[f], &o.Fields[f].B, []float64{0, 0.25, 0.5, 0.75, 0.9, 1}})
	}
	ps = append(ps, param{"k1", &o.K1, []float64{0.6, 0.9, 1.2, 1.5, 2, 3}})
	ps = append(ps, param{"syn", &o.SynonymWeight, []float64{0, 0.3, 0.5, 0.6, 0.8, 1}})
	ps = append(ps, param{"cov", &o.NameCoverage, []float64{0, 0.25, 0.5, 1, 2}})
	best, ms := eval(o, false)
	fmt.Printf("start %.4f %+v\n", best, ms)
	for round := 0; round < 3; round++ {
		improved := false
		for _, p := range ps {
			orig := *p.p
			bv := orig
			for _, v := range p.vals {
				*p.p = v
				s, _ := eval(o, false)
				if s > best+1e-4 {
					best, bv, improved = s, v, true
				}
			}
			*p.p = bv
			if bv != orig {
				fmt.Printf("round %d %s %.2f -> %.2f obj %.4f\n", round, p.name, orig, bv, best)
			}
		}
		if !improved {
			break
		}
	}
	for _, p := range ps {
		fmt.Printf("%s=%.2f ", p.name, *p.p)
	}
	fmt.Println()
	s, ms := eval(o, false)
	fmt.Printf("tune %.4f bfcl %+v\n meta %+v\n kw %+v\n", s, ms[0], ms[1], ms[2])
	s, ms = eval(o, true)
	fmt.Printf("hold %.4f bfcl %+v\n meta %+v\n kw %+v\n", s, ms[0], ms[1], ms[2])
	d := Options{Cutoff: -1}.withDefaults()
	s, ms = eval(d, true)
	fmt.Printf("hold-default %.4f bfcl %+v\n meta %+v\n", s, ms[0], ms[1])
}
