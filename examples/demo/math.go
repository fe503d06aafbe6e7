package demo

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// Bounds of the math tools.
const (
	maxFactorial = 170 // 171! overflows a float64
	maxStatItems = maxListItems
)

type numberResult struct {
	Result float64 `json:"result" jsonschema:"the computed value"`
}

type integerResult struct {
	Result int64 `json:"result" jsonschema:"the computed integer"`
}

type statsResult struct {
	Count        int     `json:"count" jsonschema:"number of values"`
	Sum          float64 `json:"sum" jsonschema:"sum of the values"`
	Mean         float64 `json:"mean" jsonschema:"arithmetic mean"`
	Median       float64 `json:"median" jsonschema:"middle value (mean of the two middle values for an even count)"`
	Min          float64 `json:"min" jsonschema:"smallest value"`
	Max          float64 `json:"max" jsonschema:"largest value"`
	Range        float64 `json:"range" jsonschema:"max minus min"`
	Variance     float64 `json:"variance" jsonschema:"population variance"`
	Stddev       float64 `json:"stddev" jsonschema:"population standard deviation"`
	SampleStddev float64 `json:"sample_stddev" jsonschema:"sample standard deviation (n-1); 0 for a single value"`
}

type conversionResult struct {
	Value    float64 `json:"value" jsonschema:"the input value"`
	From     string  `json:"from" jsonschema:"the input unit"`
	To       string  `json:"to" jsonschema:"the output unit"`
	Result   float64 `json:"result" jsonschema:"the value in the output unit"`
	Category string  `json:"category" jsonschema:"length, mass or temperature"`
}

type primeResult struct {
	N     int64 `json:"n" jsonschema:"the number tested"`
	Prime bool  `json:"prime" jsonschema:"whether n is prime"`
}

type factorialResult struct {
	N      int64   `json:"n" jsonschema:"the input"`
	Result float64 `json:"result" jsonschema:"n! as a number (exact up to 18!, rounded beyond)"`
	Exact  string  `json:"exact" jsonschema:"n! exactly, as decimal digits"`
	Digits int     `json:"digits" jsonschema:"number of decimal digits of n!"`
}

type expressionResult struct {
	Expression string  `json:"expression" jsonschema:"the expression as given"`
	Result     float64 `json:"result" jsonschema:"its value"`
}

// formatNumber prints a float the shortest way that reads back exactly.
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// numberOut returns a numeric result, or an error if it is not finite.
func numberOut(op string, v float64) (*mcp.CallToolResult, error) {
	if math.IsNaN(v) {
		return nil, fmt.Errorf("%s: the result is not a real number", op)
	}
	if math.IsInf(v, 0) {
		return nil, fmt.Errorf("%s: the result is too large to represent", op)
	}
	return structured(numberResult{Result: v}, formatNumber(v))
}

// binaryOp builds a tool of two numbers a and b.
func binaryOp(name, description, aDesc, bDesc string, f func(a, b float64) (float64, error)) toolDef {
	return toolDef{
		newTool(name, description,
			mcp.WithNumber("a", mcp.Required(), mcp.Description(aDesc)),
			mcp.WithNumber("b", mcp.Required(), mcp.Description(bDesc)),
			mcp.WithOutputSchema[numberResult](), readOnly(),
		),
		func(_ context.Context, a args) (*mcp.CallToolResult, error) {
			x, err := a.number("a")
			if err != nil {
				return nil, err
			}
			y, err := a.number("b")
			if err != nil {
				return nil, err
			}
			v, err := f(x, y)
			if err != nil {
				return nil, err
			}
			return numberOut(name, v)
		},
	}
}

// mathTools returns the math server's tools.
func mathTools() []toolDef {
	return []toolDef{
		binaryOp("add", "Add two numbers: a + b.", "First addend.", "Second addend.",
			func(a, b float64) (float64, error) { return a + b, nil }),
		binaryOp("subtract", "Subtract b from a: a - b.", "Minuend (the number to subtract from).", "Subtrahend (the number to subtract).",
			func(a, b float64) (float64, error) { return a - b, nil }),
		binaryOp("multiply", "Multiply two numbers: a × b.", "First factor.", "Second factor.",
			func(a, b float64) (float64, error) { return a * b, nil }),
		binaryOp("divide", "Divide a by b: a ÷ b. Dividing by zero is an error.", "Dividend (numerator).", "Divisor (denominator); must not be 0.",
			func(a, b float64) (float64, error) {
				if b == 0 {
					return 0, fmt.Errorf("division by zero: argument \"b\" must not be 0")
				}
				return a / b, nil
			}),
		{newTool("power",
			"Raise base to exponent: base^exponent. Fractional exponents of negative bases are an error.",
			mcp.WithNumber("base", mcp.Required(), mcp.Description("The base.")),
			mcp.WithNumber("exponent", mcp.Required(), mcp.Description("The exponent; may be negative or fractional.")),
			mcp.WithOutputSchema[numberResult](), readOnly(),
		), power},
		{newTool("sqrt",
			"Square root of a non-negative number.",
			mcp.WithNumber("x", mcp.Required(), mcp.Description("The number; must be >= 0."), mcp.Min(0)),
			mcp.WithOutputSchema[numberResult](), readOnly(),
		), sqrt},
		{newTool("evaluate_expression",
			"Evaluate an arithmetic expression safely (no code is run): numbers, + - * / % ^ (power), parentheses, unary minus, the constants pi and e and the functions sqrt, abs, ln, log, log2, exp, sin, cos, tan, floor, ceil, round. Example: \"(2 + 3) * 4 ^ 2 / sqrt(16)\".",
			mcp.WithString("expression", mcp.Required(), mcp.Description("The expression, up to 1000 characters, e.g. \"2 * (3 + 4) - 5^2\"."), mcp.MinLength(1), mcp.MaxLength(maxExprChars)),
			mcp.WithOutputSchema[expressionResult](), readOnly(),
		), evaluateExpression},
		{newTool("statistics",
			"Descriptive statistics of a list of numbers: count, sum, mean, median, min, max, range, population variance and standard deviation, and sample standard deviation.",
			mcp.WithArray("values", mcp.Required(), mcp.Description("The numbers, 1 to 10000 of them."), mcp.WithNumberItems(), mcp.MinItems(1), mcp.MaxItems(maxStatItems)),
			mcp.WithOutputSchema[statsResult](), readOnly(),
		), statistics},
		{newTool("convert_units",
			"Convert a value between units of length (mm, cm, m, km, in, ft, yd, mi, nmi), mass (mg, g, kg, t, oz, lb, st) or temperature (celsius, fahrenheit, kelvin). Both units must measure the same thing.",
			mcp.WithNumber("value", mcp.Required(), mcp.Description("The quantity to convert.")),
			mcp.WithString("from", mcp.Required(), mcp.Description("Unit of the value."), mcp.Enum(unitNames()...)),
			mcp.WithString("to", mcp.Required(), mcp.Description("Unit to convert to; same category as from."), mcp.Enum(unitNames()...)),
			mcp.WithOutputSchema[conversionResult](), readOnly(),
		), convertUnits},
		{newTool("gcd",
			"Greatest common divisor of two integers (Euclid's algorithm). gcd(0, 0) is 0.",
			mcp.WithInteger("a", mcp.Required(), mcp.Description("First integer, |a| <= 2^53.")),
			mcp.WithInteger("b", mcp.Required(), mcp.Description("Second integer, |b| <= 2^53.")),
			mcp.WithOutputSchema[integerResult](), readOnly(),
		), gcdTool},
		{newTool("lcm",
			"Least common multiple of two integers. lcm with 0 is 0; results above 2^53 are an error.",
			mcp.WithInteger("a", mcp.Required(), mcp.Description("First integer, |a| <= 2^53.")),
			mcp.WithInteger("b", mcp.Required(), mcp.Description("Second integer, |b| <= 2^53.")),
			mcp.WithOutputSchema[integerResult](), readOnly(),
		), lcmTool},
		{newTool("is_prime",
			"Test whether a non-negative integer up to 2^53 is prime (exact, not probabilistic, in this range).",
			mcp.WithInteger("n", mcp.Required(), mcp.Description("The integer to test, 0 <= n <= 2^53."), mcp.Min(0), mcp.Max(maxSafeInteger)),
			mcp.WithOutputSchema[primeResult](), readOnly(),
		), isPrime},
		{newTool("factorial",
			"n! for 0 <= n <= 170, both as a number and as exact decimal digits.",
			mcp.WithInteger("n", mcp.Required(), mcp.Description("The integer, 0 to 170."), mcp.Min(0), mcp.Max(maxFactorial)),
			mcp.WithOutputSchema[factorialResult](), readOnly(),
		), factorial},
		{newTool("round_number",
			"Round a number to a given number of decimal places (half away from zero). Negative decimals round to tens, hundreds, ...",
			mcp.WithNumber("value", mcp.Required(), mcp.Description("The number to round.")),
			mcp.WithInteger("decimals", mcp.Description("Decimal places, -15 to 15 (default 0)."), mcp.Min(-15), mcp.Max(15), mcp.DefaultNumber(0)),
			mcp.WithOutputSchema[numberResult](), readOnly(),
		), roundNumber},
	}
}

func power(_ context.Context, a args) (*mcp.CallToolResult, error) {
	base, err := a.number("base")
	if err != nil {
		return nil, err
	}
	exp, err := a.number("exponent")
	if err != nil {
		return nil, err
	}
	if base == 0 && exp < 0 {
		return nil, fmt.Errorf("power: 0 raised to a negative exponent is a division by zero")
	}
	if base < 0 && exp != math.Trunc(exp) {
		return nil, fmt.Errorf("power: a negative base with a fractional exponent has no real result")
	}
	return numberOut("power", math.Pow(base, exp))
}

func sqrt(_ context.Context, a args) (*mcp.CallToolResult, error) {
	x, err := a.number("x")
	if err != nil {
		return nil, err
	}
	if x < 0 {
		return nil, fmt.Errorf("sqrt: argument \"x\" must be >= 0, got %s", formatNumber(x))
	}
	return numberOut("sqrt", math.Sqrt(x))
}

func evaluateExpression(_ context.Context, a args) (*mcp.CallToolResult, error) {
	src, err := a.nonEmpty("expression")
	if err != nil {
		return nil, err
	}
	v, err := evalExpr(src)
	if err != nil {
		return nil, fmt.Errorf("evaluating expression: %w", err)
	}
	return structured(expressionResult{Expression: src, Result: v}, formatNumber(v))
}

func statistics(_ context.Context, a args) (*mcp.CallToolResult, error) {
	vals, err := a.numList("values", true, maxStatItems)
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("argument \"values\" must hold at least one number")
	}
	s := computeStats(vals)
	if math.IsInf(s.Sum, 0) || math.IsInf(s.Variance, 0) {
		return nil, fmt.Errorf("statistics: the values are too large to sum")
	}
	return structured(s, "")
}

// computeStats computes descriptive statistics of a non-empty list. The
// variance uses Welford's algorithm, which stays accurate for values with a
// large common offset.
func computeStats(vals []float64) statsResult {
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	n := len(sorted)
	var sum, mean, m2 float64
	for i, v := range vals {
		sum += v
		d := v - mean
		mean += d / float64(i+1)
		m2 += d * (v - mean)
	}
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	s := statsResult{
		Count: n, Sum: sum, Mean: mean, Median: median,
		Min: sorted[0], Max: sorted[n-1], Range: sorted[n-1] - sorted[0],
		Variance: m2 / float64(n),
	}
	s.Stddev = math.Sqrt(s.Variance)
	if n > 1 {
		s.SampleStddev = math.Sqrt(m2 / float64(n-1))
	}
	return s
}

func convertUnits(_ context.Context, a args) (*mcp.CallToolResult, error) {
	v, err := a.number("value")
	if err != nil {
		return nil, err
	}
	from, err := a.enum("from", "", unitNames()...)
	if err != nil {
		return nil, err
	}
	to, err := a.enum("to", "", unitNames()...)
	if err != nil {
		return nil, err
	}
	out, cat, err := convertUnit(v, from, to)
	if err != nil {
		return nil, err
	}
	if math.IsInf(out, 0) {
		return nil, fmt.Errorf("convert_units: the result is too large to represent")
	}
	return structured(conversionResult{Value: v, From: from, To: to, Result: out, Category: cat},
		fmt.Sprintf("%s %s = %s %s", formatNumber(v), from, formatNumber(out), to))
}

// twoIntegers reads the integer arguments a and b, each within ±2^53.
func twoIntegers(a args) (int64, int64, error) {
	x, err := a.integer("a", -maxSafeInteger, maxSafeInteger)
	if err != nil {
		return 0, 0, err
	}
	y, err := a.integer("b", -maxSafeInteger, maxSafeInteger)
	if err != nil {
		return 0, 0, err
	}
	return x, y, nil
}

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func gcdTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	x, y, err := twoIntegers(a)
	if err != nil {
		return nil, err
	}
	g := gcd(x, y)
	return structured(integerResult{Result: g}, strconv.FormatInt(g, 10))
}

func lcmTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	x, y, err := twoIntegers(a)
	if err != nil {
		return nil, err
	}
	if x == 0 || y == 0 {
		return structured(integerResult{Result: 0}, "0")
	}
	// |x/g*y| can exceed int64; compute exactly, then check the bound.
	l := new(big.Int).Mul(big.NewInt(x/gcd(x, y)), big.NewInt(y))
	l.Abs(l)
	if l.Cmp(big.NewInt(maxSafeInteger)) > 0 {
		return nil, fmt.Errorf("lcm(%d, %d) = %s is larger than 2^53, the largest integer a JSON number holds exactly", x, y, l)
	}
	return structured(integerResult{Result: l.Int64()}, l.String())
}

func isPrime(_ context.Context, a args) (*mcp.CallToolResult, error) {
	n, err := a.integer("n", 0, maxSafeInteger)
	if err != nil {
		return nil, err
	}
	// ProbablyPrime(0) runs Baillie-PSW, which has no known (and, below
	// 2^64, provably no) false positives.
	prime := big.NewInt(n).ProbablyPrime(0)
	text := fmt.Sprintf("%d is not prime", n)
	if prime {
		text = fmt.Sprintf("%d is prime", n)
	}
	return structured(primeResult{N: n, Prime: prime}, text)
}

func factorial(_ context.Context, a args) (*mcp.CallToolResult, error) {
	n, err := a.integer("n", 0, maxFactorial)
	if err != nil {
		return nil, err
	}
	exact := new(big.Int).MulRange(1, n)
	if n == 0 {
		exact.SetInt64(1)
	}
	f, _ := new(big.Float).SetInt(exact).Float64()
	digits := exact.String()
	return structured(factorialResult{N: n, Result: f, Exact: digits, Digits: len(digits)}, digits)
}

func roundNumber(_ context.Context, a args) (*mcp.CallToolResult, error) {
	v, err := a.number("value")
	if err != nil {
		return nil, err
	}
	d, err := a.optInteger("decimals", 0, -15, 15)
	if err != nil {
		return nil, err
	}
	p := math.Pow(10, float64(d))
	r := math.Round(v*p) / p
	if math.IsInf(v*p, 0) {
		// v*p overflowed: v has no digits at that precision to round away.
		r = v
	}
	return numberOut("round_number", r)
}
