package qemu

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// qmp runs one QMP command on machine id's monitor socket and decodes its
// return value into out (nil to ignore it), all within d. A connection per
// command keeps the driver stateless: QEMU's monitor takes one at a time
// and answers in a few milliseconds.
func (r *Runtime) qmp(id string, d time.Duration, command string, args, out any) error {
	conn, err := net.DialTimeout("unix", r.path(id, qmpSocket), d)
	if err != nil {
		return fmt.Errorf("qmp %s: %w", command, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(d))
	rd := bufio.NewReader(conn)
	enc := json.NewEncoder(conn)
	// The greeting, then the capabilities negotiation, then the command.
	if _, err := readQMP(rd); err != nil {
		return fmt.Errorf("qmp greeting: %w", err)
	}
	for _, c := range []struct {
		name string
		args any
	}{{"qmp_capabilities", nil}, {command, args}} {
		msg := map[string]any{"execute": c.name}
		if c.args != nil {
			msg["arguments"] = c.args
		}
		if err := enc.Encode(msg); err != nil {
			return fmt.Errorf("qmp %s: %w", c.name, err)
		}
		ret, err := readQMP(rd)
		if err != nil {
			return fmt.Errorf("qmp %s: %w", c.name, err)
		}
		if c.name == command && out != nil {
			if err := json.Unmarshal(ret, out); err != nil {
				return fmt.Errorf("qmp %s: %w", c.name, err)
			}
		}
	}
	return nil
}

// readQMP reads the next answer (return value, error or greeting), skipping
// asynchronous events.
func readQMP(rd *bufio.Reader) (json.RawMessage, error) {
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var msg struct {
			QMP    json.RawMessage `json:"QMP"`
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("bad QMP message %q: %w", line, err)
		}
		switch {
		case msg.Error != nil:
			return nil, fmt.Errorf("%s: %s", msg.Error.Class, msg.Error.Desc)
		case msg.Return != nil:
			return msg.Return, nil
		case msg.QMP != nil:
			return msg.QMP, nil
		}
	}
}
