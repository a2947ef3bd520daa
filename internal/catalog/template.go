package catalog

import "strings"

// placeholders returns the property names a template refers to as {name}, in order. Only a
// brace followed by name characters and a closing brace counts, so JSON text in a template
// (`{"Authorization": "Bearer {token}"}`) keeps its own braces.
func placeholders(tmpl string) []string {
	var out []string
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '{' {
			continue
		}
		j := i + 1
		for j < len(tmpl) && (isAlnum(tmpl[j]) || tmpl[j] == '_') {
			j++
		}
		if j > i+1 && j < len(tmpl) && tmpl[j] == '}' {
			out = append(out, tmpl[i+1:j])
			i = j
		}
	}
	return out
}

// fill replaces each {name} in tmpl with values[name]. ok is false when a name has no value:
// the caller then leaves out whatever the template was for.
func fill(tmpl string, values map[string]string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] == '{' {
			j := i + 1
			for j < len(tmpl) && (isAlnum(tmpl[j]) || tmpl[j] == '_') {
				j++
			}
			if j > i+1 && j < len(tmpl) && tmpl[j] == '}' {
				v, ok := values[tmpl[i+1:j]]
				if !ok {
					return "", false
				}
				b.WriteString(v)
				i = j
				continue
			}
		}
		b.WriteByte(tmpl[i])
	}
	return b.String(), true
}
