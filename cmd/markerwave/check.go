package main

import "github.com/markerwave/markerwave/model"

func init() {
	register("check", "explore a TLC model (.cfg) exhaustively in Go, or simulate it", model.RunCheck)
}
