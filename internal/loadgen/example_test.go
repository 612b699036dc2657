package loadgen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tokentrace/tokentrace/internal/loadgen"
	"github.com/tokentrace/tokentrace/internal/loadgen/loadgentest"
)

func ExampleRun() {
	// A fake OpenAI-compatible server on loopback: 20 tokens, 2 ms apart.
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{FirstDelay: 5 * time.Millisecond, Gaps: loadgentest.Gaps(19, 2*time.Millisecond)}
	})
	defer srv.Close()

	cfg := loadgen.DefaultConfig()
	cfg.BaseURL = srv.URL
	cfg.Rate = 200 // requests/s, Poisson
	cfg.Requests = 10
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary()
	fmt.Println("successful:", s.Successful, "failed:", s.Failed)
	fmt.Println("TPOT samples:", s.TPOT.Count, "ITL samples:", s.ITL.Count)
	// s.WriteText(os.Stdout) prints the vLLM-style report.
	// Output:
	// successful: 10 failed: 0
	// TPOT samples: 10 ITL samples: 190
}

func ExampleParseMix() {
	types, err := loadgen.ParseMix("qa=0.9,intruder=0.1", loadgen.BuiltinTypes())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range types {
		fmt.Printf("%s weight %.1f: %d prompt tokens, max %d output tokens\n", t.Name, t.Weight, t.PromptTokens, t.MaxTokens)
	}
	// Output:
	// qa weight 0.9: 50 prompt tokens, max 100 output tokens
	// intruder weight 0.1: 3000 prompt tokens, max 50 output tokens
}
