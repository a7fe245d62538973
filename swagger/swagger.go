// Package swagger embeds the committed OpenAPI description of /api/v1, which the API test
// regenerates and compares (go test ./internal/api -run TestSwaggerFileIsCurrent -update).
package swagger

import _ "embed"

// V1 is swagger/v1/swagger.yaml.
//
//go:embed v1/swagger.yaml
var V1 []byte
