package demo

import (
	"math"
	"strings"
	"testing"
)

func TestMathTools(t *testing.T) {
	c := connect(t, "math")
	runCases(t, c, []toolCase{
		{name: "add", tool: "add", args: `{"a":2,"b":3}`, want: map[string]any{"result": 5}, text: "5"},
		{name: "add fractions", tool: "add", args: `{"a":0.5,"b":-1.25}`, want: map[string]any{"result": -0.75}},
		{name: "subtract", tool: "subtract", args: `{"a":10,"b":4}`, want: map[string]any{"result": 6}},
		{name: "multiply", tool: "multiply", args: `{"a":-3,"b":7}`, want: map[string]any{"result": -21}},
		{name: "divide", tool: "divide", args: `{"a":7,"b":2}`, want: map[string]any{"result": 3.5}},
		{name: "power", tool: "power", args: `{"base":2,"exponent":10}`, want: map[string]any{"result": 1024}},
		{name: "power negative exponent", tool: "power", args: `{"base":2,"exponent":-2}`, want: map[string]any{"result": 0.25}},
		{name: "power negative base integer exponent", tool: "power", args: `{"base":-2,"exponent":3}`, want: map[string]any{"result": -8}},
		{name: "sqrt", tool: "sqrt", args: `{"x":144}`, want: map[string]any{"result": 12}},
		{name: "expression precedence", tool: "evaluate_expression", args: `{"expression":"2 + 3 * 4"}`, want: map[string]any{"result": 14}},
		{name: "expression parentheses and power", tool: "evaluate_expression", args: `{"expression":"(2 + 3) * 4 ^ 2 / sqrt(16)"}`, want: map[string]any{"result": 20, "expression": "(2 + 3) * 4 ^ 2 / sqrt(16)"}},
		{name: "expression unary minus", tool: "evaluate_expression", args: `{"expression":"-2^2 + -(-3)"}`, want: map[string]any{"result": -1}},
		{name: "statistics", tool: "statistics", args: `{"values":[2,4,4,4,5,5,7,9]}`,
			want: map[string]any{"count": 8, "sum": 40, "mean": 5, "median": 4.5, "min": 2, "max": 9, "range": 7, "variance": 4, "stddev": 2},
			check: func(t *testing.T, got map[string]any) {
				if s := got["sample_stddev"].(float64); math.Abs(s-2.138089935299395) > 1e-12 {
					t.Errorf("sample_stddev = %v", s)
				}
			}},
		{name: "statistics single value", tool: "statistics", args: `{"values":[3]}`, want: map[string]any{"median": 3, "stddev": 0, "sample_stddev": 0}},
		{name: "km to mi", tool: "convert_units", args: `{"value":42.195,"from":"km","to":"mi"}`, want: map[string]any{"category": "length"},
			check: func(t *testing.T, got map[string]any) {
				if r := got["result"].(float64); math.Abs(r-26.218757) > 1e-6 {
					t.Errorf("42.195 km = %v mi, want 26.218757", r)
				}
			}},
		{name: "lb to kg", tool: "convert_units", args: `{"value":10,"from":"lb","to":"kg"}`, want: map[string]any{"result": 4.5359237, "category": "mass"}},
		{name: "boiling point", tool: "convert_units", args: `{"value":100,"from":"celsius","to":"fahrenheit"}`, want: map[string]any{"result": 212}, text: "100 celsius = 212 fahrenheit"},
		{name: "kelvin to celsius", tool: "convert_units", args: `{"value":0,"from":"kelvin","to":"celsius"}`, want: map[string]any{"result": -273.15}},
		{name: "gcd", tool: "gcd", args: `{"a":1071,"b":462}`, want: map[string]any{"result": 21}},
		{name: "gcd negative", tool: "gcd", args: `{"a":-12,"b":18}`, want: map[string]any{"result": 6}},
		{name: "lcm", tool: "lcm", args: `{"a":4,"b":6}`, want: map[string]any{"result": 12}},
		{name: "lcm with zero", tool: "lcm", args: `{"a":0,"b":6}`, want: map[string]any{"result": 0}},
		{name: "prime", tool: "is_prime", args: `{"n":7919}`, want: map[string]any{"prime": true}, text: "7919 is prime"},
		{name: "large prime", tool: "is_prime", args: `{"n":9007199254740881}`, want: map[string]any{"prime": true}},
		{name: "composite", tool: "is_prime", args: `{"n":561}`, want: map[string]any{"prime": false}},
		{name: "one is not prime", tool: "is_prime", args: `{"n":1}`, want: map[string]any{"prime": false}},
		{name: "factorial 0", tool: "factorial", args: `{"n":0}`, want: map[string]any{"result": 1, "exact": "1"}},
		{name: "factorial 20", tool: "factorial", args: `{"n":20}`, want: map[string]any{"result": 2432902008176640000, "exact": "2432902008176640000", "digits": 19}},
		{name: "factorial 170", tool: "factorial", args: `{"n":170}`, want: map[string]any{"digits": 307},
			check: func(t *testing.T, got map[string]any) {
				if !strings.HasPrefix(got["exact"].(string), "7257415615307998967") {
					t.Errorf("170! = %v...", got["exact"])
				}
			}},
		{name: "round", tool: "round_number", args: `{"value":3.14159,"decimals":2}`, want: map[string]any{"result": 3.14}},
		{name: "round to hundreds", tool: "round_number", args: `{"value":1234.5,"decimals":-2}`, want: map[string]any{"result": 1200}},
		{name: "round default", tool: "round_number", args: `{"value":-2.5}`, want: map[string]any{"result": -3}},

		// Broken input.
		{name: "divide by zero", tool: "divide", args: `{"a":1,"b":0}`, errHas: []string{"division by zero", `"b"`}},
		{name: "add a string", tool: "add", args: `{"a":"2","b":3}`, errHas: []string{`argument "a" must be a number, got string`}},
		{name: "add missing b", tool: "add", args: `{"a":2}`, errHas: []string{`missing required argument "b"`}},
		{name: "multiply overflow", tool: "multiply", args: `{"a":1e308,"b":10}`, errHas: []string{"too large"}},
		{name: "sqrt negative", tool: "sqrt", args: `{"x":-4}`, errHas: []string{`"x" must be >= 0`}},
		{name: "zero to negative power", tool: "power", args: `{"base":0,"exponent":-1}`, errHas: []string{"division by zero"}},
		{name: "negative base fractional exponent", tool: "power", args: `{"base":-8,"exponent":0.5}`, errHas: []string{"no real result"}},
		{name: "expression syntax", tool: "evaluate_expression", args: `{"expression":"2 +* 3"}`, errHas: []string{`unexpected "*" at position 4`}},
		{name: "expression code", tool: "evaluate_expression", args: `{"expression":"exit(1)"}`, errHas: []string{`unknown name "exit"`}},
		{name: "expression member access", tool: "evaluate_expression", args: `{"expression":"os.exit(1)"}`, errHas: []string{"position 3"}},
		{name: "expression unbalanced", tool: "evaluate_expression", args: `{"expression":"(1 + 2"}`, errHas: []string{`expected ")"`}},
		{name: "expression divide by zero", tool: "evaluate_expression", args: `{"expression":"1 / (2 - 2)"}`, errHas: []string{"division by zero"}},
		{name: "expression empty", tool: "evaluate_expression", args: `{"expression":" "}`, errHas: []string{`"expression" must not be empty`}},
		{name: "expression too long", tool: "evaluate_expression", args: `{"expression":"` + strings.Repeat("1+", 600) + `1"}`, errHas: []string{"too long"}},
		{name: "statistics empty", tool: "statistics", args: `{"values":[]}`, errHas: []string{"at least one number"}},
		{name: "statistics non-number", tool: "statistics", args: `{"values":[1,"two"]}`, errHas: []string{"item 1 must be a number, got string"}},
		{name: "convert across categories", tool: "convert_units", args: `{"value":1,"from":"kg","to":"m"}`, errHas: []string{"cannot convert kg (mass) to m (length)"}},
		{name: "convert unknown unit", tool: "convert_units", args: `{"value":1,"from":"furlong","to":"m"}`, errHas: []string{`"from" must be one of`, `"furlong"`}},
		{name: "below absolute zero", tool: "convert_units", args: `{"value":-500,"from":"celsius","to":"kelvin"}`, errHas: []string{"below absolute zero"}},
		{name: "gcd fraction", tool: "gcd", args: `{"a":1.5,"b":3}`, errHas: []string{`"a" must be an integer`}},
		{name: "lcm overflow", tool: "lcm", args: `{"a":9007199254740881,"b":9007199254740847}`, errHas: []string{"larger than 2^53"}},
		{name: "is_prime negative", tool: "is_prime", args: `{"n":-7}`, errHas: []string{`"n" must be between 0 and`}},
		{name: "factorial too big", tool: "factorial", args: `{"n":171}`, errHas: []string{`"n" must be between 0 and 170, got 171`}},
		{name: "factorial huge", tool: "factorial", args: `{"n":1e300}`, errHas: []string{`"n" must be between 0 and 170`}},
		{name: "round too many decimals", tool: "round_number", args: `{"value":1,"decimals":16}`, errHas: []string{`"decimals" must be between -15 and 15`}},
	})
}

func TestEvalExpr(t *testing.T) {
	tests := []struct {
		src  string
		want float64
	}{
		{"1", 1},
		{".5 + 1e3", 1000.5},
		{"2.5E-1", 0.25},
		{"10 - 4 - 3", 3},
		{"2 ^ 3 ^ 2", 512},
		{"-2 ^ 2", -4},
		{"(-2) ^ 2", 4},
		{"2 ^ -1", 0.5},
		{"7 % 3", 1},
		{"--3", 3},
		{"+3", 3},
		{"PI * 2", 2 * math.Pi},
		{"e", math.E},
		{"abs(-3) + floor(2.7) + ceil(0.2) + round(2.5)", 3 + 2 + 1 + 3},
		{"log(1000) + ln(e) + log2(8)", 3 + 1 + 3},
		{"sqrt(2) * sqrt(2)", 2.0000000000000004},
		{"  ( ( 1 ) )  ", 1},
	}
	for _, tt := range tests {
		got, err := evalExpr(tt.src)
		if err != nil {
			t.Errorf("evalExpr(%q) error %v", tt.src, err)
			continue
		}
		if got != tt.want {
			t.Errorf("evalExpr(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestEvalExprErrors(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"", "empty"},
		{"1 +", "unexpected end of expression at position 4"},
		{"1 2", "unexpected number 2 at position 3"},
		{")", `unexpected ")" at position 1`},
		{"sqrt 4", "needs parentheses"},
		{"sqrt(-1)", "not a number"},
		{"10 ^ 400", "too large"},
		{"1 $ 2", `unexpected character '$' at position 3`},
		{"1..2", `invalid number "1..2"`},
		{"5 % 0", "modulo by zero"},
		{"x", `unknown name "x"`},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested too deeply"},
		{strings.Repeat("-", 100) + "1", "nested too deeply"},
		{"2^" + strings.Repeat("2^", 100) + "2", "nested too deeply"},
	}
	for _, tt := range tests {
		_, err := evalExpr(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("evalExpr(%q) error = %v, want it to contain %q", tt.src, err, tt.want)
		}
	}
}

// FuzzEvalExpr checks that no input makes the parser panic, hang or return
// a non-finite number without an error.
func FuzzEvalExpr(f *testing.F) {
	for _, s := range []string{"1+2*3", "-(4^0.5)/sqrt(16)", "((1)", "2^^3", "pi*e%3", "1e309", "sin(cos(tan(1)))", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := evalExpr(src)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("evalExpr(%q) = %v without an error", src, v)
		}
		if err != nil && err.Error() == "" {
			t.Errorf("evalExpr(%q) returned an empty error", src)
		}
	})
}

func TestConvertUnitRoundTrip(t *testing.T) {
	units := unitNames()
	for _, from := range units {
		for _, to := range units {
			fc, _, _ := unitInfo(from)
			tc, _, _ := unitInfo(to)
			if fc != tc {
				continue
			}
			there, _, err := convertUnit(300, from, to)
			if err != nil {
				t.Errorf("%s -> %s: %v", from, to, err)
				continue
			}
			back, _, err := convertUnit(there, to, from)
			if err != nil || math.Abs(back-300) > 1e-6 {
				t.Errorf("300 %s -> %v %s -> %v %s (err %v)", from, there, to, back, from, err)
			}
		}
	}
}
