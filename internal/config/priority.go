package config

import "go.yaml.in/yaml/v3"

// markPriorities sets Tenant.PrioritySet for the tenants whose document
// names a priority: only they have a configured class; the others take
// their class from their processes' nice values.
func (c *Config) markPriorities(data []byte) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	tenants := mappingValue(root, "tenants")
	if tenants == nil || tenants.Kind != yaml.SequenceNode {
		return
	}
	for i, t := range tenants.Content {
		if i < len(c.Tenants) && mappingValue(t, "priority") != nil {
			c.Tenants[i].PrioritySet = true
		}
	}
}

// mappingValue returns the value of key in a mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
