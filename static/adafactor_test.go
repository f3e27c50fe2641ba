package static

import "testing"

// TestAdafactorFactoredState derives Adafactor's optimizer memory from the optimizer's own code, not from the
// estimator: torch.optim.Adafactor (as transformers' Adafactor without beta1) keeps, for a parameter of two
// dimensions (rows, cols), a row statistic of rows values and a column statistic of cols values
// (p.grad.new_zeros with the last, then the second-to-last dimension set to 1), and for a vector a full second
// moment; the step counter lives on the CPU. The states take the gradient's dtype: bf16 in pure bf16 training,
// fp32 otherwise, where mixed precision adds the fp32 master copy of every parameter.
//
// The model is the tiny Hugging Face Llama of the other tests: per layer q_proj (h, a·d), k_proj and v_proj
// (h, g·d), o_proj (a·d, h), gate_proj and up_proj (f, h), down_proj (h, f) and two RMSNorm weights of h; the
// embedding (V, h), an untied lm_head (V, h) and the final norm (h).
func TestAdafactorFactoredState(t *testing.T) {
	const h, a, g, d, f, v, layers = th, ta, tg, td, tf, tv, tl
	perLayer := (h + a*d) + 2*(h+g*d) + (a*d + h) + 2*(f+h) + (h + f) + 2*h
	stateValues := int64(layers*perLayer + (v + h) + (v + h) + h)
	params := int64(layers*(h*a*d+2*h*g*d+a*d*h+3*f*h+2*h) + 2*v*h + h)
	for _, tc := range []struct {
		precision string
		want      int64
	}{
		{"bf16", 2 * stateValues},
		{"fp32", 4 * stateValues},
		{"bf16-mixed", 4*stateValues + 4*params},
	} {
		r := tiny(t, func(c *Config) { c.Training.Optimizer, c.Training.Precision = "adafactor", tc.precision })
		st := r.Stages[0]
		if st.Params != params {
			t.Fatalf("%s: %d parameters, the layout above has %d", tc.precision, st.Params, params)
		}
		if st.Optimizer != tc.want {
			t.Errorf("%s: optimizer memory %d bytes, want %d (%d factored state values)", tc.precision, st.Optimizer, tc.want, stateValues)
		}
	}
}
