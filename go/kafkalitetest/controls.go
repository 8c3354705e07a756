package kafkalitetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// TokenEnv names the variable that holds the controls' shared secret: the broker started with it
// in its environment demands it (--controls-token), and NewControls sends it.
const TokenEnv = "KAFKALITE_CONTROLS_TOKEN"

// Controls reaches a broker's controls endpoint (`kafkalite --controls PORT`). Its method per
// control is in controls_gen.go; Call runs any control by name.
type Controls struct {
	URL    string
	Client *http.Client
	Token  string // sent as Authorization: Bearer when not empty
}

// ControlError is a control the broker refused (status 400) or failed (500).
type ControlError struct {
	Name   string
	Status int
	Text   string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("control %s: %s (HTTP %d)", e.Name, e.Text, e.Status)
}

// NewControls returns the controls at url (the controls= URL of the broker's ready line), with
// the token of $KAFKALITE_CONTROLS_TOKEN.
func NewControls(url string) *Controls {
	if !strings.HasSuffix(url, "/") {
		url += "/"
	}
	return &Controls{URL: url, Client: &http.Client{Timeout: 60 * time.Second}, Token: os.Getenv(TokenEnv)}
}

// Call runs the control name with args (a struct of the generated *Args types, a map, or nil)
// and returns its JSON result.
func (c *Controls) Call(name string, args any) (json.RawMessage, error) {
	body := []byte("{}")
	if args != nil {
		var err error
		if body, err = json.Marshal(args); err != nil {
			return nil, err
		}
	}
	resp, err := c.do(http.MethodPost, "controls/"+name, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return nil, fmt.Errorf("control %s: HTTP %d, not JSON: %.200s", name, resp.StatusCode, data)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &ControlError{Name: name, Status: resp.StatusCode, Text: answer.Error}
	}
	return answer.Result, nil
}

// do sends a request to the controls endpoint, with the token when there is one and body as
// JSON when there is a body.
func (c *Controls) do(method, path string, body []byte) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.URL+path, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return c.Client.Do(req)
}

// ControlInfo is one entry of the broker's control table.
type ControlInfo struct {
	Name       string                     `json:"name"`
	Parameters map[string]json.RawMessage `json:"parameters"`
	Doc        string                     `json:"doc"`
}

// List is the broker's control table (GET /controls).
func (c *Controls) List() ([]ControlInfo, error) {
	resp, err := c.do(http.MethodGet, "controls", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var table struct {
		Controls []ControlInfo `json:"controls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		return nil, err
	}
	return table.Controls, nil
}

// ControlTable is the control table the methods of Controls were generated from (GET /controls
// without the docs), as JSON.
func ControlTable() string { return controlTable }
