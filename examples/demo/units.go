package demo

import (
	"fmt"
	"math"
	"strconv"
)

// unitNames lists every unit convert_units accepts, grouped by category.
func unitNames() []string {
	return []string{
		"mm", "cm", "m", "km", "in", "ft", "yd", "mi", "nmi",
		"mg", "g", "kg", "t", "oz", "lb", "st",
		"celsius", "fahrenheit", "kelvin",
	}
}

// unitInfo returns a unit's category and, for length and mass, its size in
// the category's base unit (metre, kilogram).
func unitInfo(u string) (category string, factor float64, ok bool) {
	switch u {
	case "mm":
		return "length", 0.001, true
	case "cm":
		return "length", 0.01, true
	case "m":
		return "length", 1, true
	case "km":
		return "length", 1000, true
	case "in":
		return "length", 0.0254, true
	case "ft":
		return "length", 0.3048, true
	case "yd":
		return "length", 0.9144, true
	case "mi":
		return "length", 1609.344, true
	case "nmi":
		return "length", 1852, true
	case "mg":
		return "mass", 1e-6, true
	case "g":
		return "mass", 1e-3, true
	case "kg":
		return "mass", 1, true
	case "t":
		return "mass", 1000, true
	case "oz":
		return "mass", 0.028349523125, true
	case "lb":
		return "mass", 0.45359237, true
	case "st":
		return "mass", 6.35029318, true
	case "celsius", "fahrenheit", "kelvin":
		return "temperature", 0, true
	}
	return "", 0, false
}

// convertUnit converts v from one unit to another of the same category.
func convertUnit(v float64, from, to string) (float64, string, error) {
	fc, ff, ok := unitInfo(from)
	if !ok {
		return 0, "", fmt.Errorf("unknown unit %q", from)
	}
	tc, tf, ok := unitInfo(to)
	if !ok {
		return 0, "", fmt.Errorf("unknown unit %q", to)
	}
	if fc != tc {
		return 0, "", fmt.Errorf("cannot convert %s (%s) to %s (%s): the units measure different things", from, fc, to, tc)
	}
	if fc != "temperature" {
		return roundNoise(v * ff / tf), fc, nil
	}
	var kelvin float64
	switch from {
	case "celsius":
		kelvin = v + 273.15
	case "fahrenheit":
		kelvin = (v-32)*5/9 + 273.15
	case "kelvin":
		kelvin = v
	}
	if kelvin < 0 {
		return 0, "", fmt.Errorf("%v %s is below absolute zero", v, from)
	}
	var out float64
	switch to {
	case "celsius":
		out = kelvin - 273.15
	case "fahrenheit":
		out = (kelvin-273.15)*9/5 + 32
	case "kelvin":
		out = kelvin
	}
	return roundNoise(out), fc, nil
}

// roundNoise rounds to 15 significant digits, undoing binary noise such as
// 4.535923700000001 for 10 lb -> kg; a double carries 15-17 digits, and the
// conversion factors are exact to far fewer.
func roundNoise(f float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 15, 64), 64)
	if err != nil || math.IsInf(r, 0) {
		return f
	}
	return r
}
