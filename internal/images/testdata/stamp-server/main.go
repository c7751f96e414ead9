// A stand-in server for the build stamp's test: the standard library only, so it builds in
// seconds with no module download.
package main

import "fmt"

func main() { fmt.Println("stamp-server") }
